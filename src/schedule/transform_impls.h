#pragma once
// What every schedule transform defines in its own file, the dispatch over the Transform variant
// (apply.cpp, trace.cpp) and the checks the transforms share. Private to src/schedule.

#include <optional>
#include <string>
#include <string_view>

#include "cannl/schedule/transforms.h"
#include "schedule/loop_tree.h"
#include "schedule/trace_step.h"

namespace cannl::schedule::detail {

/// Selects a transform type in the overloads that take no value of it.
template <class T>
struct Kind {};

// A transform T (its struct and its place in the Transform variant are in transforms.h) is one
// file, split.cpp for Split, ..., defining four functions:
//   apply_transform(r, t)   the rewrite of routine r (throws ScheduleError when illegal);
//   trace_name(Kind<T>)     its name in traces and messages: "split";
//   print_args(out, t)      its arguments in a trace line (after the name), and
//   parse_args(in, Kind<T>) the same arguments read back (words 1 on), the text byte-identical.
// schedule::apply, transform_name, record and replay dispatch to them by overload, so a
// transform missing here does not compile.
#define CANNL_SCHEDULE_TRANSFORM(T)                                          \
  ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const T& t); \
  std::string_view trace_name(Kind<T>);                                      \
  void print_args(StepWriter& out, const T& t);                              \
  T parse_args(const StepReader& in, Kind<T>);

CANNL_SCHEDULE_TRANSFORM(Split)
CANNL_SCHEDULE_TRANSFORM(Swap)
CANNL_SCHEDULE_TRANSFORM(Retype)
CANNL_SCHEDULE_TRANSFORM(Unroll)
CANNL_SCHEDULE_TRANSFORM(Pad)
CANNL_SCHEDULE_TRANSFORM(Tensorize)
CANNL_SCHEDULE_TRANSFORM(ExpandZero)
CANNL_SCHEDULE_TRANSFORM(SplitReduce)
CANNL_SCHEDULE_TRANSFORM(Stage)
CANNL_SCHEDULE_TRANSFORM(Partition)
CANNL_SCHEDULE_TRANSFORM(Privatize)
CANNL_SCHEDULE_TRANSFORM(FuseEpilogue)
CANNL_SCHEDULE_TRANSFORM(StagePartials)
CANNL_SCHEDULE_TRANSFORM(GatherWindows)
CANNL_SCHEDULE_TRANSFORM(BucketScatter)
#undef CANNL_SCHEDULE_TRANSFORM

/// The loop bound by `s`, or a ScheduleError listing the routine's loops. Loops inside a
/// TileMma fallback are refused (the tile describes them).
LoopSite require_loop(const ir::LoweredRoutine& r, ir::Symbol s, const std::string& action);

/// Throws ScheduleError when a symbol the transform was minted with for a loop it makes already
/// binds a loop (or is a static) of `r`: the transform applied a second time, or its symbols
/// taken from another, would bind one symbol twice, which the verifier rejects (nested) or traces
/// cannot tell apart (in sequence).
void require_unbound(const ir::LoweredRoutine& r, const std::vector<ir::Symbol>& minted, const std::string& action);

/// Throws ScheduleError when making loop `s` of `r` of type `type` is proven illegal.
void check_axis_type(const ir::LoweredRoutine& r, ir::Symbol s, ir::AxisType type, const std::string& action);

/// The operands of a matmul update d = add(d, mul(a, b)) (either argument order, the product
/// in the add's dtype) or d = fma(a, b, d), a and b plain reads of nodes other than d.
struct MatmulUpdate {
  const ir::Get* a = nullptr;
  const ir::Get* b = nullptr;
  bool fused = false;
  ir::DType dtype = ir::DType::F32;
};
std::optional<MatmulUpdate> parse_matmul_update(const ir::Set& x);

/// The tile of the store `x` when it is a matmul update for loops t.i, t.j, t.k (descriptor
/// fields d, a, b, dtype, fused; axes and fallback unset), or nullopt.
std::optional<ir::TileMma> match_update(const ir::Set& x, const Tensorize& t);

/// `r` with its body replaced.
ir::LoweredRoutine with_body(const ir::LoweredRoutine& r, ir::StmtRef body);

/// The i64 condition `index < bound`.
ir::ScalarRef index_below(const ir::AxisIndex& index, std::int64_t bound);

}  // namespace cannl::schedule::detail
