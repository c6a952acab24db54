#pragma once
// Interval analysis over loop-IR indices and scalars (0.8 notes, "Interval analysis"): a closed
// range [lo, hi] every value of an expression lies in, never NaN. Facts come only from loop
// extents, routine statics with a known range, dtype ranges and constants (semantics 4.12), so a
// decision based on them holds for every execution.
//
//   SymbolRanges r;  r.bind(i, 0, 3);                       // for i in [0, 4)
//   index_interval(AxisIndex{{{2, i}}, 1}, r)               // [1, 7], integral

#include <cstdint>
#include <map>
#include <optional>

#include "cannl/ir/loop_ir.h"

namespace cannl::opt {

/// A closed range of values with no NaN. `integral`: every value is an integer.
struct Interval {
  double lo = 0;
  double hi = 0;
  bool integral = false;

  bool is_point() const { return lo == hi; }
  /// Interval{2, 5, true}.contains(Interval{3, 4, true})
  bool contains(const Interval& other) const { return lo <= other.lo && other.hi <= hi; }
  friend bool operator==(const Interval&, const Interval&) = default;
};

/// The values each loop symbol or static takes where an expression is evaluated.
class SymbolRanges {
 public:
  /// Records lo <= s <= hi (inclusive). ranges.bind(i, 0, 3)
  void bind(ir::Symbol s, std::int64_t lo, std::int64_t hi) { ranges_[s.id] = {lo, hi}; }
  void unbind(ir::Symbol s) { ranges_.erase(s.id); }
  /// The range of s, if known.
  std::optional<Interval> of(ir::Symbol s) const;
  /// Ranges of a routine's statics that declare one: batch in [0, range).
  static SymbolRanges of_statics(const std::vector<ir::StaticSymbol>& statics);

 private:
  std::map<int, std::pair<std::int64_t, std::int64_t>> ranges_;
};

/// Range of an affine index, or nullopt when a symbol is unknown or the bounds exceed 2^53.
/// index_interval(AxisIndex::fixed(4), {}) == Interval{4, 4, true}
std::optional<Interval> index_interval(const ir::AxisIndex& index, const SymbolRanges& ranges);

/// Range of a scalar's value (in its own dtype), or nullopt when unknown or possibly NaN.
/// scalar_interval(apply(Op::Cmplt, F32, {x, y}), r) == Interval{0, 1, true}
std::optional<Interval> scalar_interval(const ir::ScalarRef& scalar, const SymbolRanges& ranges);

/// Range of the values of dtype `t` (integers: the full range; floats: nullopt, may be NaN).
std::optional<Interval> dtype_interval(ir::DType t);

/// The range after converting every value of `iv` (of dtype `from`) to dtype `to`; conversions
/// are monotone except wrapping integer casts, which give the full range of `to`.
std::optional<Interval> convert_interval(const Interval& iv, ir::DType from, ir::DType to);

/// True when a comparison `op` (Cmplt, Cmpeq, Cmpne) of values in `a` and `b` has the same
/// result for every pair: the result (0 or 1) then. decide_comparison(Op::Cmplt, {0,3}, {4,9}) == 1
std::optional<int> decide_comparison(ir::Op op, const Interval& a, const Interval& b);

}  // namespace cannl::opt
