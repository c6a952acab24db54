// The mixed-precision policy of contractions (include/cannl/tensor/precision_policy.h).
#include "cannl/tensor/precision_policy.h"

#include <map>

#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/tensor.h"

namespace cannl {
namespace {

/// The innermost live PrecisionScope's policy on this thread (nullopt: the config key decides).
thread_local std::optional<PrecisionPolicy> scoped_policy;

struct Named {
  std::string_view name;
  MatmulPrecision precision;
};
constexpr Named kNames[] = {{"f32", MatmulPrecision::F32},
                            {"bf16", MatmulPrecision::BF16},
                            {"f16", MatmulPrecision::F16},
                            {"tf32", MatmulPrecision::TF32}};

}  // namespace

std::string_view PrecisionPolicy::name() const {
  for (const auto& n : kNames)
    if (n.precision == matmul) return n.name;
  throw InternalError("PrecisionPolicy::name: unknown precision");
}

PrecisionPolicy PrecisionPolicy::from_name(std::string_view name, std::string_view what) {
  for (const auto& n : kNames)
    if (n.name == name) return PrecisionPolicy{n.precision};
  throw ConfigError(std::string(what) + " = '" + std::string(name) +
                    "': expected a precision policy, one of f32, bf16, f16, tf32");
}

PrecisionPolicy current_precision_policy() {
  if (scoped_policy) return *scoped_policy;
  const std::string name = config::get("precision");
  return PrecisionPolicy::from_name(
      name, "config key 'precision' (from " + config::source_of("precision") + ")");
}

PrecisionScope::PrecisionScope(PrecisionPolicy policy) : previous_(scoped_policy) {
  scoped_policy = policy;
}

PrecisionScope::~PrecisionScope() { scoped_policy = previous_; }

std::string precision_summary(const std::vector<Tensor>& roots) {
  std::map<MatmulPrecision, int> counts;
  for (const Tensor& t : topological_order(roots))
    if (t.impl().matmul_precision) ++counts[*t.impl().matmul_precision];
  if (counts.empty()) return std::string(current_precision_policy().name()) + " (no sums of products)";
  if (counts.size() == 1)
    return std::string(PrecisionPolicy{counts.begin()->first}.name()) + " (" +
           std::to_string(counts.begin()->second) + " sums of products)";
  std::string out;
  for (const auto& [precision, n] : counts)
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " +
           std::string(PrecisionPolicy{precision}.name());
  return out;
}

std::optional<ir::Op> operand_rounding(MatmulPrecision precision) {
  switch (precision) {
    case MatmulPrecision::F32: return std::nullopt;
    case MatmulPrecision::BF16: return ir::Op::RoundBf16;
    case MatmulPrecision::F16: return ir::Op::RoundF16;
    case MatmulPrecision::TF32: return ir::Op::RoundTf32;
  }
  throw InternalError("operand_rounding: unknown precision");
}

ir::NarrowFormat narrow_format(MatmulPrecision precision) {
  switch (precision) {
    case MatmulPrecision::F32: return ir::NarrowFormat::None;
    case MatmulPrecision::BF16: return ir::NarrowFormat::BF16;
    case MatmulPrecision::F16: return ir::NarrowFormat::F16;
    case MatmulPrecision::TF32: return ir::NarrowFormat::TF32;
  }
  throw InternalError("narrow_format: unknown precision");
}

}  // namespace cannl
