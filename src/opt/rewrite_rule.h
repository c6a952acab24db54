#pragma once
// The simplifier's rules as data (STYLE.md: "Algebraic rewrites are tables of rules"): each rule
// is a name and a function from one Apply node (whose arguments are already simplified) to its
// replacement, or nullptr when the rule does not apply. simplify.cpp applies the table bottom-up
// to a fixed point; every rule must strictly simplify (fewer nodes, or a canonical form) so the
// fixed point is reached.
//
//   {"add_zero", [](const ir::Apply& a, const RuleEnv&) { ... x + 0 -> x ... }}

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "cannl/interp/value.h"
#include "cannl/ir/loop_ir.h"
#include "interval.h"

namespace cannl::opt {

/// Options of the simplifier. The defaults only make exact rewrites: the result is bit for bit
/// the unoptimized one (up to the sign of a zero and NaN payloads). The others are licensed
/// float rewrites that change roundings; differential tests compare them with a tolerance.
///   SimplifyOptions{.reassociate_floats = true}
struct SimplifyOptions {
  bool reassociate_floats = false;  // (x+c1)+c2 -> x+(c1+c2), (a/b)/c -> a/(b*c) on floats
  bool fuse_multiply_add = false;   // a + b*c -> fma(b, c, a) on floats (one rounding, not two)
};

/// What a rule may consult besides the node: the symbol ranges where it is evaluated.
struct RuleEnv {
  const SymbolRanges& ranges;
  const SimplifyOptions& options;
};

/// One rewrite rule: a named pattern -> replacement function.
struct RewriteRule {
  std::string_view name;
  std::function<ir::ScalarRef(const ir::Apply&, const RuleEnv&)> rewrite;
};

/// The table, in the order rules are tried (folding first).
const std::vector<RewriteRule>& simplify_rules();

// ---- helpers shared by the rule files ----

/// The value of a constant scalar (Constant or ConstantBits), if it is one.
std::optional<interp::Value> constant_of(const ir::ScalarRef& s);
/// A scalar denoting exactly `v` (integers as ConstantBits, floats as Constant).
/// nullptr for u4x32 values.
ir::ScalarRef scalar_of(const interp::Value& v);
/// `x` as an argument of an op of dtype `d` would see it: x itself when of dtype d, else
/// identity:d(x), which converts exactly like the op would (op_cast(x, F32) for an i64 x).
ir::ScalarRef op_cast(const ir::ScalarRef& x, ir::DType d);
/// `x` converted to `d` by a store (SetLocal, Set), or nullptr when no scalar expresses that
/// conversion exactly (a narrow target from an f64 or integer source would round twice).
ir::ScalarRef store_cast(const ir::ScalarRef& x, ir::DType d);
/// True when the constant `x` equals `value` in its own dtype (is_constant(x, 0) for 0.0, -0.0).
bool is_constant(const ir::ScalarRef& x, double value);
/// Structural equality of pure scalars (no renaming; LocalScopes compare by printed text).
bool same_scalar(const ir::ScalarRef& a, const ir::ScalarRef& b);

}  // namespace cannl::opt
