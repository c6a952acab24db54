#pragma once
// One function per transform (one .cpp each), dispatched by schedule::apply (apply.cpp), and
// the checks they share. Private to src/schedule.

#include <optional>
#include <string>

#include "cannl/schedule/transforms.h"
#include "schedule/loop_tree.h"

namespace cannl::schedule::detail {

ir::LoweredRoutine apply_split(const ir::LoweredRoutine& r, const Split& t);
ir::LoweredRoutine apply_swap(const ir::LoweredRoutine& r, const Swap& t);
ir::LoweredRoutine apply_retype(const ir::LoweredRoutine& r, const Retype& t);
ir::LoweredRoutine apply_unroll(const ir::LoweredRoutine& r, const Unroll& t);
ir::LoweredRoutine apply_pad(const ir::LoweredRoutine& r, const Pad& t);
ir::LoweredRoutine apply_tensorize(const ir::LoweredRoutine& r, const Tensorize& t);
ir::LoweredRoutine apply_expand_zero(const ir::LoweredRoutine& r, const ExpandZero& t);
ir::LoweredRoutine apply_split_reduce(const ir::LoweredRoutine& r, const SplitReduce& t);
ir::LoweredRoutine apply_stage(const ir::LoweredRoutine& r, const Stage& t);
ir::LoweredRoutine apply_partition(const ir::LoweredRoutine& r, const Partition& t);
ir::LoweredRoutine apply_privatize(const ir::LoweredRoutine& r, const Privatize& t);
ir::LoweredRoutine apply_fuse_epilogue(const ir::LoweredRoutine& r, const FuseEpilogue& t);
ir::LoweredRoutine apply_stage_partials(const ir::LoweredRoutine& r, const StagePartials& t);

/// The loop bound by `s`, or a ScheduleError listing the routine's loops. Loops inside a
/// TileMma fallback are refused (the tile describes them).
LoopSite require_loop(const ir::LoweredRoutine& r, ir::Symbol s, const std::string& action);

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
