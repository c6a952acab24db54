// Interval analysis (see interval.h). Float arithmetic is only tracked on integral ranges that the
// compute dtype represents exactly, so no rounding can move a value outside its interval.
#include "interval.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cannl/interp/scalar_semantics.h"

namespace cannl::opt {

using ir::DType;
using ir::Op;

namespace {

constexpr double kTwo53 = 9007199254740992.0;

// Largest magnitude up to which every integer is exact in float dtype t.
double exact_integer_limit(DType t) {
  switch (t) {
    case DType::F64: return kTwo53;
    case DType::F32: return 16777216.0;
    case DType::F16: return 2048.0;
    case DType::BF16: return 256.0;
    default: return 8.0;  // fp8: the narrowest mantissa of its formats
  }
}

bool is_integer_dtype(DType t) { return t != DType::U4x32 && !ir::is_float(t); }

std::optional<Interval> finite_point(const interp::Value& v) {
  const double d = interp::convert(v, DType::F64).get<double>();
  if (!std::isfinite(d) || std::abs(d) > kTwo53) return std::nullopt;
  return Interval{d, d, d == std::trunc(d)};
}

// The interval of an op's result in compute dtype `d` when its argument ranges are exact there.
// Integer ops compute exactly, but the bounds were computed in f64: a bound of magnitude 2^53 may
// be the rounding of 2^53 + 1 (2^53 - 1 + 2), so only bounds below 2^53 are trusted.
std::optional<Interval> checked(Interval r, DType d) {
  if (is_integer_dtype(d)) {
    const auto range = dtype_interval(d);
    if (std::abs(r.lo) >= kTwo53 || std::abs(r.hi) >= kTwo53 || !range->contains(r)) return range;
    return r;
  }
  const double limit = exact_integer_limit(d);
  if (!r.integral || std::abs(r.lo) > limit || std::abs(r.hi) > limit) return std::nullopt;
  return r;
}

Interval product(const Interval& a, const Interval& b) {
  const double c[] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4), a.integral && b.integral};
}

std::optional<Interval> integer_division(Op op, const Interval& a, const Interval& b) {
  if (!b.is_point() || b.lo <= 0) return std::nullopt;
  const double m = b.lo;
  if (op == Op::Div) return Interval{std::trunc(a.lo / m), std::trunc(a.hi / m), true};
  if (a.lo >= 0) return Interval{0, std::min(m - 1, a.hi), true};
  return Interval{-(m - 1), m - 1, true};
}

std::optional<Interval> arithmetic(Op op, DType d, const std::vector<std::optional<Interval>>& x) {
  auto all = [&] { return std::all_of(x.begin(), x.end(), [](const auto& i) { return i.has_value(); }); };
  if (!all()) return std::nullopt;
  const Interval& a = *x[0];
  switch (op) {
    case Op::Identity: return a;
    case Op::Neg: return checked({-a.hi, -a.lo, a.integral}, d);
    case Op::Relu: return Interval{std::max(a.lo, 0.0), std::max(a.hi, 0.0), a.integral};
    case Op::Trunc: return Interval{std::trunc(a.lo), std::trunc(a.hi), true};
    case Op::Arg1: return a;
    case Op::Arg2: return *x[1];
    case Op::Add: return checked({a.lo + x[1]->lo, a.hi + x[1]->hi, a.integral && x[1]->integral}, d);
    case Op::Sub: return checked({a.lo - x[1]->hi, a.hi - x[1]->lo, a.integral && x[1]->integral}, d);
    case Op::Mul: return checked(product(a, *x[1]), d);
    case Op::Max:
      return Interval{std::max(a.lo, x[1]->lo), std::max(a.hi, x[1]->hi), a.integral && x[1]->integral};
    case Op::Min:
      return Interval{std::min(a.lo, x[1]->lo), std::min(a.hi, x[1]->hi), a.integral && x[1]->integral};
    case Op::Div: case Op::Mod:
      return is_integer_dtype(d) ? integer_division(op, a, *x[1]) : std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<Interval> apply_interval(const ir::Apply& a, const SymbolRanges& ranges) {
  const DType d = ir::compute_dtype(a.dtype);
  std::optional<Interval> result;
  if (ir::op_is_predicate(a.op)) {
    result = Interval{0, 1, true};
  } else if (a.op == Op::Where) {
    const auto b = scalar_interval(a.args[1], ranges);
    const auto c = scalar_interval(a.args[2], ranges);
    const auto bd = b ? convert_interval(*b, ir::scalar_dtype(*a.args[1]), d) : std::nullopt;
    const auto cd = c ? convert_interval(*c, ir::scalar_dtype(*a.args[2]), d) : std::nullopt;
    if (bd && cd) result = Interval{std::min(bd->lo, cd->lo), std::max(bd->hi, cd->hi), bd->integral && cd->integral};
  } else if (a.op != Op::Uniform1 && a.op != Op::ThreefryCrypto && a.op != Op::ThreefryLight) {
    std::vector<std::optional<Interval>> args;
    for (const auto& arg : a.args) {
      const auto iv = scalar_interval(arg, ranges);
      args.push_back(iv ? convert_interval(*iv, ir::scalar_dtype(*arg), d) : std::nullopt);
    }
    result = arithmetic(a.op, d, args);
  }
  if (!result && is_integer_dtype(d)) result = dtype_interval(d);
  return result ? convert_interval(*result, d, a.dtype) : std::nullopt;
}

}  // namespace

std::optional<Interval> SymbolRanges::of(ir::Symbol s) const {
  const auto it = ranges_.find(s.id);
  if (it == ranges_.end()) return std::nullopt;
  return Interval{static_cast<double>(it->second.first), static_cast<double>(it->second.second), true};
}

SymbolRanges SymbolRanges::of_statics(const std::vector<ir::StaticSymbol>& statics) {
  SymbolRanges r;
  for (const auto& s : statics)
    if (s.range > 0) r.bind(s.symbol, 0, s.range - 1);
  return r;
}

std::optional<Interval> index_interval(const ir::AxisIndex& index, const SymbolRanges& ranges) {
  constexpr double kLimit = 1125899906842624.0;  // 2^50: sums of a few such terms stay exact
  Interval r{static_cast<double>(index.offset), static_cast<double>(index.offset), true};
  if (std::abs(r.lo) > kLimit) return std::nullopt;
  for (const auto& term : index.terms) {
    const auto s = ranges.of(term.symbol);
    if (!s) return std::nullopt;
    const Interval t = product({static_cast<double>(term.coeff), static_cast<double>(term.coeff), true}, *s);
    if (std::abs(t.lo) > kLimit || std::abs(t.hi) > kLimit) return std::nullopt;
    r = {r.lo + t.lo, r.hi + t.hi, true};
  }
  return r;
}

std::optional<Interval> scalar_interval(const ir::ScalarRef& scalar, const SymbolRanges& ranges) {
  struct Visitor {
    const SymbolRanges& r;
    std::optional<Interval> operator()(const ir::Constant& c) const {
      return finite_point(interp::constant_value(c.value, c.dtype));
    }
    std::optional<Interval> operator()(const ir::ConstantBits& c) const {
      if (c.dtype == DType::U4x32) return std::nullopt;
      return finite_point(interp::constant_bits_value(c.bits, c.dtype));
    }
    std::optional<Interval> operator()(const ir::Get& g) const { return dtype_interval(g.node->dtype); }
    std::optional<Interval> operator()(const ir::GetDynamic& g) const { return dtype_interval(g.node->dtype); }
    std::optional<Interval> operator()(const ir::LocalScope& l) const { return dtype_interval(l.dtype); }
    std::optional<Interval> operator()(const ir::GetLocal& l) const { return dtype_interval(l.dtype); }
    std::optional<Interval> operator()(const ir::EmbedIndex& e) const { return index_interval(e.index, r); }
    std::optional<Interval> operator()(const ir::Apply& a) const { return apply_interval(a, r); }
  };
  if (!scalar) return std::nullopt;
  return std::visit(Visitor{ranges}, scalar->node);
}

std::optional<Interval> dtype_interval(DType t) {
  switch (t) {
    case DType::I32: return Interval{-2147483648.0, 2147483647.0, true};
    case DType::I64: return Interval{-9223372036854775808.0, 9223372036854775808.0, true};
    case DType::U32: return Interval{0, 4294967295.0, true};
    case DType::U64: return Interval{0, 18446744073709551616.0, true};
    case DType::U8: return Interval{0, 255, true};
    default: return std::nullopt;  // floats may be NaN; u4x32 is not ordered
  }
}

std::optional<Interval> convert_interval(const Interval& iv, DType from, DType to) {
  if (from == to) return iv;
  if (from == DType::U4x32 || to == DType::U4x32) return std::nullopt;
  if (is_integer_dtype(from) && is_integer_dtype(to)) {
    const auto range = dtype_interval(to);
    return range->contains(iv) ? iv : range;  // a wrapping cast is not monotone
  }
  auto conv = [&](double x) {
    return interp::convert(interp::convert(interp::Value::of(x), from), to);
  };
  const double lo = interp::convert(conv(iv.lo), DType::F64).get<double>();
  const double hi = interp::convert(conv(iv.hi), DType::F64).get<double>();
  if (!std::isfinite(lo) || !std::isfinite(hi)) return std::nullopt;
  return Interval{lo, hi, iv.integral || is_integer_dtype(to)};
}

std::optional<int> decide_comparison(Op op, const Interval& a, const Interval& b) {
  switch (op) {
    case Op::Cmplt:
      if (a.hi < b.lo) return 1;
      if (a.lo >= b.hi) return 0;
      return std::nullopt;
    case Op::Cmpeq: case Op::Cmpne: {
      std::optional<int> eq;
      if (a.hi < b.lo || b.hi < a.lo) eq = 0;
      if (a.is_point() && b.is_point() && a.lo == b.lo) eq = 1;
      if (!eq) return std::nullopt;
      return op == Op::Cmpeq ? *eq : 1 - *eq;
    }
    default: return std::nullopt;
  }
}

}  // namespace cannl::opt
