// One-hot contribution matching (see one_hot_match.h).
#include "one_hot_match.h"

#include "cannl/ir/rewrite.h"

namespace cannl::opt {

using ir::DType;
using ir::Op;

namespace {

// Every integer in [0, bound] converts exactly to `t`.
bool exact_up_to(DType t, std::int64_t bound) {
  switch (t) {
    case DType::F64: return bound <= (std::int64_t{1} << 53);
    case DType::F32: return bound <= (std::int64_t{1} << 24);
    case DType::F16: return bound <= 2048;
    case DType::BF16: return bound <= 256;
    case DType::FP8: return bound <= 8;
    case DType::I32: return bound <= 2147483647;
    case DType::U32: return bound <= 4294967295LL;
    case DType::U8: return bound <= 255;
    case DType::I64: case DType::U64: return true;
    default: return false;  // u4x32
  }
}

const ir::Apply* as_apply(const ir::ScalarRef& s, Op op) {
  const auto* a = std::get_if<ir::Apply>(&s->node);
  return a && a->op == op ? a : nullptr;
}

// The loop counter k itself, through conversions that keep every k in [begin, end) exact.
bool is_counter(const ir::ScalarRef& s, ir::Symbol k, std::int64_t begin, std::int64_t end) {
  if (const auto* a = as_apply(s, Op::Identity))
    return a->args.size() == 1 && exact_up_to(a->dtype, end - 1) && is_counter(a->args[0], k, begin, end);
  const auto* e = std::get_if<ir::EmbedIndex>(&s->node);
  return e && e->index.offset == 0 && e->index.terms.size() == 1 && e->index.terms[0].coeff == 1 &&
         e->index.terms[0].symbol == k;
}

// (k == e) or (e == k), possibly converted (0 and 1 survive every conversion).
std::optional<ir::ScalarRef> selector_row(const ir::ScalarRef& s, ir::Symbol k, std::int64_t begin,
                                          std::int64_t end, const SelectorSource& source) {
  if (const auto* a = as_apply(s, Op::Identity))
    return a->args.size() == 1 ? selector_row(a->args[0], k, begin, end, source) : std::nullopt;
  if (const auto* g = std::get_if<ir::Get>(&s->node); g && source) {
    const auto value = source(*g);
    return value ? selector_row(*value, k, begin, end, {}) : std::nullopt;
  }
  const auto* eq = as_apply(s, Op::Cmpeq);
  if (!eq || eq->args.size() != 2 || begin < 0) return std::nullopt;
  const DType compare = ir::compute_dtype(eq->dtype);  // both sides are converted to it
  if (!exact_up_to(compare, end - 1)) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const ir::ScalarRef& counter = eq->args[static_cast<std::size_t>(side)];
    const ir::ScalarRef& row = eq->args[static_cast<std::size_t>(1 - side)];
    if (is_counter(counter, k, begin, end) && !mentions(row, k)) return converted(row, compare);
  }
  return std::nullopt;
}

bool is_zero(const ir::ScalarRef& s) {
  const auto* c = std::get_if<ir::Constant>(&s->node);
  if (c) return c->value == 0;
  const auto* b = std::get_if<ir::ConstantBits>(&s->node);
  return b && b->bits == 0 && b->dtype != DType::U4x32;
}

}  // namespace

std::optional<ir::ScalarRef> selector_of(const ir::ScalarRef& value, ir::Symbol k, std::int64_t end) {
  return selector_row(value, k, 0, end, {});
}

std::optional<OneHotMatch> match_one_hot(const ir::ScalarRef& contribution, ir::Symbol k,
                                         std::int64_t begin, std::int64_t end, const SelectorSource& source) {
  if (const auto* m = as_apply(contribution, Op::Mul); m && m->args.size() == 2) {
    for (int side = 0; side < 2; ++side) {
      const auto row = selector_row(m->args[static_cast<std::size_t>(side)], k, begin, end, source);
      if (row) return OneHotMatch{*row, m->args[static_cast<std::size_t>(1 - side)], m->dtype};
    }
  }
  if (const auto* w = as_apply(contribution, Op::Where); w && w->args.size() == 3 && is_zero(w->args[2])) {
    const auto row = selector_row(w->args[0], k, begin, end, source);
    if (row) return OneHotMatch{*row, w->args[1], w->dtype};
  }
  return std::nullopt;
}

ir::ScalarRef converted(const ir::ScalarRef& s, DType dtype) {
  return ir::scalar_dtype(*s) == dtype ? s : ir::apply(Op::Identity, dtype, {s});
}

bool mentions(const ir::ScalarRef& s, ir::Symbol k) {
  // free_symbols covers indices of reads, index embeddings and nested scopes; a bound k would
  // be a second binder of the same symbol, which the IR never has.
  return ir::free_symbols(s).contains(k);
}

std::optional<int> sole_axis_of(const std::vector<ir::AxisIndex>& index, ir::Symbol k) {
  std::optional<int> axis;
  for (std::size_t p = 0; p < index.size(); ++p) {
    const auto& terms = index[p].terms;
    const bool exact = index[p].offset == 0 && terms.size() == 1 && terms[0].coeff == 1 && terms[0].symbol == k;
    bool any = false;
    for (const auto& t : terms) any = any || (t.symbol == k && t.coeff != 0);
    if (exact && !axis) {
      axis = static_cast<int>(p);
    } else if (any) {
      return std::nullopt;
    }
  }
  return axis;
}

}  // namespace cannl::opt
