#pragma once
// The two error channels of cannl (DESIGN.md, non-negotiable 1).
//
// A UserError subclass reports a mistake the user can fix (bad spec, mismatched shapes, a failing
// C compiler, a missing driver): its message says what, where and how to fix it. InternalError
// reports a bug in cannl itself. The library never aborts the process.
//
//   try { ctx.run(step); } catch (const cannl::UserError& e) { std::cerr << e.what(); }

#include <concepts>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace cannl {

/// Base of every error caused by user input. `kind()` names the subclass for messages and tests.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
  virtual const char* kind() const noexcept { return "UserError"; }
};

#define CANNL_DEFINE_USER_ERROR(Name)                                   \
  class Name : public UserError {                                       \
   public:                                                              \
    explicit Name(const std::string& message) : UserError(message) {}   \
    const char* kind() const noexcept override { return #Name; }        \
  };

CANNL_DEFINE_USER_ERROR(ShapeError)          // shape inference failed
CANNL_DEFINE_USER_ERROR(EinsumSyntaxError)   // malformed einsum spec
CANNL_DEFINE_USER_ERROR(ScheduleError)       // illegal schedule transform
CANNL_DEFINE_USER_ERROR(CompileError)        // the system compiler rejected generated code
CANNL_DEFINE_USER_ERROR(BackendUnavailable)  // compiler / driver / device missing
CANNL_DEFINE_USER_ERROR(FormatError)         // corrupt or lying file (safetensors, checkpoints)
CANNL_DEFINE_USER_ERROR(ConfigError)         // bad configuration value
CANNL_DEFINE_USER_ERROR(UninitializedError)  // a routine reads a node no one wrote or uploaded
CANNL_DEFINE_USER_ERROR(RuntimeUsageError)   // API misuse: wrong order, wrong sizes, bad arguments
CANNL_DEFINE_USER_ERROR(IoError)             // a file could not be read or written
CANNL_DEFINE_USER_ERROR(ResourceError)       // the machine ran out of memory for a routine's scratch
CANNL_DEFINE_USER_ERROR(RuntimeError)        // a device failed running work (GPU driver error, kernel fault)
CANNL_DEFINE_USER_ERROR(IndexRangeError)     // a buffer or offset does not fit the index type (large_models)
CANNL_DEFINE_USER_ERROR(DistributedError)    // another process of a distributed run died, hung or failed

#undef CANNL_DEFINE_USER_ERROR

/// A bug in cannl: an invariant the compiler itself should have kept does not hold.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message)
      : std::logic_error("cannl internal error (please report): " + message) {}
};

/// `failure` with "<where>: " put in front of its message when it is one of cannl's errors
/// (a UserError or an InternalError), keeping its dynamic type: callers still catch the
/// ShapeError or RuntimeError the work threw. Any other exception comes back unchanged (its type
/// is kept too; its message cannot be changed). For code that runs others' work somewhere the
/// work does not know about, a device's queue above all. It changes the exception object itself:
/// call it once, where the failure is caught, before the pointer is shared.
///   catch (...) { failure = with_context(std::current_exception(), "work queued on cc device 1 failed"); }
std::exception_ptr with_context(std::exception_ptr failure, std::string_view where);

/// Throws InternalError when `condition` is false. For invariants of cannl, never for user input.
inline void internal_check(bool condition, const std::string& message) {
  if (!condition) throw InternalError(message);
}
/// The same for a literal message, which then becomes a string only when the check fails.
inline void internal_check(bool condition, const char* message) {
  if (!condition) [[unlikely]] throw InternalError(message);
}

/// The same with the message built only when the check fails: for checks on hot paths (the
/// interpreter checks every element it reads or writes), where composing the text each time
/// would cost more than the work checked.
///   internal_check(i < n, [&] { return "index " + std::to_string(i) + " out of range"; });
template <std::invocable MakeMessage>
inline void internal_check(bool condition, MakeMessage&& message) {
  if (!condition) [[unlikely]] throw InternalError(std::forward<MakeMessage>(message)());
}

}  // namespace cannl
