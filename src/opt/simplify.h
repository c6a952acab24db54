#pragma once
// Simplification (semantics 4.7): the rule tables of rewrite_rule.h applied bottom-up to a fixed
// point on every scalar, with interval facts from the enclosing loops and the routine's statics;
// plus the statement-level rules: If guards and comparisons the intervals decide are folded,
// zero-trip loops and empty bodies dropped, `EmbedIndex` of a fixed index becomes a constant,
// consecutive SetLocals of a scope are merged and a LocalScope whose body is one SetLocal
// becomes its value. Pure and idempotent (simplify(simplify(r)) prints like simplify(r)).
// Runs after cleanup and before the one-hot rewrite (src/opt/pipeline.cpp).
//
//   ir::LoweredRoutine r2 = simplify(r, ctx);

#include "cannl/ir/loop_ir.h"
#include "cannl/opt/pass.h"
#include "rewrite_rule.h"

namespace cannl::opt {

/// Simplifies with the exact rules plus the fused multiply-add licence of `ctx`.
///   ir::LoweredRoutine r2 = simplify(r, ctx);
ir::LoweredRoutine simplify(const ir::LoweredRoutine& routine, const PassContext& ctx);

/// Simplifies with licensed rules as chosen in `options`.
///   simplify_with(r, ctx, SimplifyOptions{.reassociate_floats = true})
ir::LoweredRoutine simplify_with(const ir::LoweredRoutine& routine, const PassContext& ctx,
                                 const SimplifyOptions& options);

/// One scalar, with the given symbol ranges (used by the one-hot rewrite and tests).
///   simplify_scalar(apply(Op::Add, F32, {x, constant(0, F32)}), {}, {}) is x
ir::ScalarRef simplify_scalar(const ir::ScalarRef& scalar, const SymbolRanges& ranges,
                              const SimplifyOptions& options);

}  // namespace cannl::opt
