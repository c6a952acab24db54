#pragma once
// Mixed precision: how the contractions of a model multiply. Under a bf16 or f16 policy every
// sum of products (`*`, binary `einsum`) rounds both operands to the narrow format (round to
// nearest even) and accumulates the exact products in the result's precision (f32): what a
// tensor core's bf16 / f16 MMA with f32 accumulation computes. The backward contractions round
// the incoming gradient and the other operand the same way. Parameters (the master weights),
// their gradients, the optimizer's state and every tensor a contraction writes stay f32, so the
// optimizer updates in f32. TF32 (f32's exponent, 10 mantissa bits) is a licence: only the
// policy `tf32`, asked for by name, rounds f32 operands that way.
//
// The policy is read when a contraction is built, so a model built inside a scope keeps it:
//
//   Tensor loss;
//   { PrecisionScope mixed(PrecisionPolicy{MatmulPrecision::BF16});
//     loss = nn::cross_entropy(mlp(x), y); }          // every product of the MLP rounds to bf16
//   auto step = train::compile_step(ctx, loss, options);
//
// Outside any scope the config key `precision` (f32 | bf16 | f16 | tf32) decides. The rounding
// is an op of the loop IR (round_bf16, round_f16, round_tf32) applied once per cell into a copy
// named after the operand, so the generated code shows it and the product stays a plain nest:
//   w1_bf16[i] = cannl_round_bf16f(w1[i]);   ...   acc = fmaf(w1_bf16[...], x_bf16[...], acc);

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cannl/ir/ops.h"
#include "cannl/ir/tensor_node.h"

namespace cannl {

class Tensor;

/// The precision a contraction's operands are rounded to before they are multiplied.
enum class MatmulPrecision : unsigned char { F32, BF16, F16, TF32 };

struct PrecisionPolicy {
  MatmulPrecision matmul = MatmulPrecision::F32;

  /// "f32", "bf16", "f16" or "tf32".
  std::string_view name() const;
  /// The policy of a name above; ConfigError naming `what` (a key) and the accepted names otherwise.
  ///   PrecisionPolicy::from_name("bf16").matmul == MatmulPrecision::BF16
  static PrecisionPolicy from_name(std::string_view name, std::string_view what = "precision");
  friend bool operator==(const PrecisionPolicy&, const PrecisionPolicy&) = default;
};

/// The policy a contraction built now takes: the innermost live PrecisionScope's on this thread,
/// else the config key `precision`.
PrecisionPolicy current_precision_policy();

/// Makes `policy` the current one on this thread until the scope ends (scopes nest).
class PrecisionScope {
 public:
  explicit PrecisionScope(PrecisionPolicy policy);
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  std::optional<PrecisionPolicy> previous_;
};

/// How the sums of products the roots depend on multiply, for logs: "f32 (no sums of products)",
/// "bf16 (12 sums of products)", or a count per precision when they differ: "3 f32, 9 bf16".
std::string precision_summary(const std::vector<Tensor>& roots);

/// The rounding op of a precision (round_bf16, round_f16, round_tf32); nullopt for f32.
std::optional<ir::Op> operand_rounding(MatmulPrecision precision);

/// The format the operand copies of a precision hold exactly (ir::TensorNode::rounded_to):
///   narrow_format(MatmulPrecision::BF16) == ir::NarrowFormat::BF16; None for f32.
ir::NarrowFormat narrow_format(MatmulPrecision precision);

}  // namespace cannl
