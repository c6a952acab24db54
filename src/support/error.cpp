// The error classes are header-only, except with_context.
#include "cannl/support/error.h"

namespace cannl {

namespace {

// Assigning to the standard base replaces the message only: the object keeps its dynamic type
// (the subclass a caller catches), and the base's copy stays nothrow as exceptions need.
template <typename StandardBase>
void put_in_front(StandardBase& error, std::string_view where) {
  error = StandardBase(std::string(where) + ": " + error.what());
}

}  // namespace

std::exception_ptr with_context(std::exception_ptr failure, std::string_view where) {
  if (!failure) return failure;
  try {
    std::rethrow_exception(failure);
  } catch (UserError& e) {
    put_in_front<std::runtime_error>(e, where);
    return std::current_exception();  // the object changed (where rethrow copies, the copy)
  } catch (InternalError& e) {
    put_in_front<std::logic_error>(e, where);
    return std::current_exception();
  } catch (...) {
    return failure;
  }
}

}  // namespace cannl
