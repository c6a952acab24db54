// The guard of a bucketed scatter (see row_bucket.h).
#include "schedule/row_bucket.h"

#include <map>

namespace cannl::schedule::detail {

namespace {

constexpr ir::DType kCompare = ir::DType::F64;

ir::AxisIndex shifted(ir::AxisIndex index, std::int64_t by) {
  index.offset += by;
  return index;
}

// `a - b` when the two differ by a constant.
std::optional<std::int64_t> constant_difference(const ir::AxisIndex& a, const ir::AxisIndex& b) {
  std::map<ir::Symbol, std::int64_t> coeffs;
  for (const auto& t : a.terms) coeffs[t.symbol] += t.coeff;
  for (const auto& t : b.terms) coeffs[t.symbol] -= t.coeff;
  for (const auto& [symbol, c] : coeffs)
    if (c != 0) return std::nullopt;
  return a.offset - b.offset;
}

// The two arguments of `s` when it is an f64 Apply of `op` with two arguments.
const ir::Apply* binary(const ir::ScalarRef& s, ir::Op op) {
  const auto* a = s ? std::get_if<ir::Apply>(&s->node) : nullptr;
  return a && a->op == op && a->dtype == kCompare && a->args.size() == 2 ? a : nullptr;
}

const ir::AxisIndex* embedded(const ir::ScalarRef& s) {
  const auto* e = s ? std::get_if<ir::EmbedIndex>(&s->node) : nullptr;
  return e ? &e->index : nullptr;
}

bool same_args(const std::vector<ir::ScalarRef>& a, const std::vector<ir::ScalarRef>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (!same_scalar(a[k], b[k])) return false;
  return true;
}

}  // namespace

ir::ScalarRef row_bucket_guard(const ir::ScalarRef& row, const ir::AxisIndex& first, std::int64_t width) {
  const auto above = ir::apply(ir::Op::Cmplt, kCompare, {ir::embed_index(shifted(first, -1)), row});
  const auto below = ir::apply(ir::Op::Cmplt, kCompare, {row, ir::embed_index(shifted(first, width))});
  return ir::apply(ir::Op::And, kCompare, {above, below});
}

std::optional<RowRange> guarded_row_range(const ir::ScalarRef& condition, const ir::ScalarRef& row) {
  const ir::Apply* both = binary(condition, ir::Op::And);
  if (!both) return std::nullopt;
  const ir::Apply* above = binary(both->args[0], ir::Op::Cmplt);
  const ir::Apply* below = binary(both->args[1], ir::Op::Cmplt);
  if (!above || !below || !same_scalar(above->args[1], row) || !same_scalar(below->args[0], row)) return std::nullopt;
  const ir::AxisIndex* lo = embedded(above->args[0]);
  const ir::AxisIndex* hi = embedded(below->args[1]);
  if (!lo || !hi) return std::nullopt;
  // lo < row < hi: the integer rows lo + 1 .. hi - 1.
  const auto span = constant_difference(*hi, *lo);
  if (!span || *span < 2) return std::nullopt;
  return RowRange{shifted(*lo, 1), *span - 1};
}

bool same_scalar(const ir::ScalarRef& a, const ir::ScalarRef& b) {
  if (a == b) return true;
  if (!a || !b || a->node.index() != b->node.index()) return false;
  if (const auto* x = std::get_if<ir::Constant>(&a->node)) {
    const auto& y = std::get<ir::Constant>(b->node);
    return x->value == y.value && x->dtype == y.dtype;
  }
  if (const auto* x = std::get_if<ir::ConstantBits>(&a->node)) {
    const auto& y = std::get<ir::ConstantBits>(b->node);
    return x->bits == y.bits && x->dtype == y.dtype;
  }
  if (const auto* x = std::get_if<ir::Get>(&a->node)) {
    const auto& y = std::get<ir::Get>(b->node);
    return x->node == y.node && x->index == y.index;
  }
  if (const auto* x = std::get_if<ir::GetDynamic>(&a->node)) {
    const auto& y = std::get<ir::GetDynamic>(b->node);
    return x->node == y.node && x->index == y.index && x->dyn_axis == y.dyn_axis && same_scalar(x->dyn_value, y.dyn_value);
  }
  if (const auto* x = std::get_if<ir::EmbedIndex>(&a->node)) return x->index == std::get<ir::EmbedIndex>(b->node).index;
  if (const auto* x = std::get_if<ir::Apply>(&a->node)) {
    const auto& y = std::get<ir::Apply>(b->node);
    return x->op == y.op && x->dtype == y.dtype && same_args(x->args, y.args);
  }
  return false;  // locals and scopes: only the same object
}

}  // namespace cannl::schedule::detail
