#pragma once
// The reference interpreter of the loop IR: slow, obviously correct, the oracle for every pass and
// backend. It follows the typing and conversion rules stated in cannl/ir/loop_ir.h exactly.
//
//   interp::Buffers buffers{{a->id, a_bytes}, {c->id, c_bytes}};
//   interp::run(routine, buffers, /*static_values=*/{});

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>

#include "cannl/ir/loop_ir.h"

namespace cannl::interp {

/// Storage of each node the routine touches, by node id, in the node's storage format
/// (f16/bf16 as their 16-bit patterns, fp8 as its byte, u4x32 as four u32 words).
using Buffers = std::unordered_map<int, std::span<std::byte>>;

/// Told what a run does, in the order it does it: each loop iteration, each element read or
/// written, each barrier. The interpreter has one thread of control; an observer can tell which
/// GPU thread an access stands for from the loops around it (a race checker of kernels does).
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void iteration(const ir::For& loop, std::int64_t index) = 0;
  virtual void loop_done(const ir::For& loop) = 0;
  virtual void access(const ir::TensorNode& node, std::int64_t element, bool write) = 0;
  /// What happened to a scalar local: declared (a DeclareLocal's fresh zero), set from the value
  /// just evaluated (SetLocal), read (GetLocal); a local scope opened (its local a fresh zero, its
  /// body about to run in the middle of the expression being evaluated) or closed (its body done,
  /// its local read as the scope's value). The statements of a scope's body are steps of the
  /// expression around it, not statements of their own.
  enum class LocalEvent { Declared, Set, Read, ScopeOpened, ScopeClosed };
  virtual void local(int scope_id, LocalEvent event) = 0;
  virtual void barrier() = 0;
};

/// Executes `routine`. `static_values[k]` is the value of `routine.statics[k]`; `observer`, when
/// given, is told each step.
/// Throws InternalError on malformed IR (unbound symbol, missing buffer, out-of-bounds access).
void run(const ir::LoweredRoutine& routine, const Buffers& buffers,
         std::span<const std::int64_t> static_values, Observer* observer = nullptr);

}  // namespace cannl::interp
