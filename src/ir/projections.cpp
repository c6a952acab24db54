// Surjectivity and injectivity of a projection's LHS map (semantics-backend.md 3.1).
//
// Both checks are sufficient conditions: a `false` only costs an initialization (lowering fills
// the LHS with the neutral element first), while a wrong `true` would leave cells unwritten or
// turn an accumulation into an overwrite. So every doubt answers `false`.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "cannl/ir/indexing.h"

namespace cannl::ir {

namespace {

/// Extent of `s` in the product space, or nullopt for a symbol that is not a product iterator
/// (a static symbol: fixed during one run of the loops).
std::optional<std::int64_t> extent_of(const Projections& p, Symbol s) {
  for (std::size_t i = 0; i < p.product_iterators.size(); ++i)
    if (p.product_iterators[i] == s) return p.product_space[i];
  return std::nullopt;
}

/// Terms of one LHS position that vary across iterations: product iterators with extent > 1,
/// repeated symbols merged, zero coefficients dropped.
std::map<Symbol, std::int64_t> varying_terms(const Projections& p, const AxisIndex& index) {
  std::map<Symbol, std::int64_t> merged;
  for (const auto& t : index.terms) {
    const auto extent = extent_of(p, t.symbol);
    if (extent && *extent > 1) merged[t.symbol] += t.coeff;
  }
  std::erase_if(merged, [](const auto& kv) { return kv.second == 0; });
  return merged;
}

/// Mixed-radix rule: with the terms sorted by |coeff|, each coefficient exceeds the largest value
/// the smaller terms can reach, so the position's value determines every symbol in `residual`.
bool mixed_radix(const Projections& p, const std::map<Symbol, std::int64_t>& residual) {
  std::vector<std::pair<std::int64_t, std::int64_t>> coeff_extent;
  for (const auto& [s, c] : residual) coeff_extent.emplace_back(std::llabs(c), *extent_of(p, s));
  std::sort(coeff_extent.begin(), coeff_extent.end());
  std::int64_t reach = 0;
  for (const auto& [c, extent] : coeff_extent) {
    if (c < 1 + reach) return false;
    reach += c * (extent - 1);
  }
  return true;
}

/// An LHS axis of logical size <= 1 is covered when its index is always 0.
bool always_zero(const Projections& p, const AxisIndex& index) {
  if (index.offset != 0) return false;
  for (const auto& t : index.terms) {
    const auto extent = extent_of(p, t.symbol);
    if (!extent || *extent > 1) return false;
  }
  return true;
}

bool well_formed(const Projections& p) {
  return p.product_space.size() == p.product_iterators.size() &&
         p.project_lhs.size() == p.lhs_dims.size();
}

bool has_zero_extent(const std::vector<std::int64_t>& extents) {
  return std::find(extents.begin(), extents.end(), 0) != extents.end();
}

}  // namespace

bool Projections::is_surjective() const {
  if (!well_formed(*this)) return false;
  // A product axis of extent 0 (a reduction over an empty axis) runs the loops zero times: then
  // only an LHS without cells is covered, whatever its map.
  if (has_zero_extent(product_space)) return has_zero_extent(lhs_dims);
  std::set<Symbol> used;
  for (std::size_t axis = 0; axis < project_lhs.size(); ++axis) {
    const AxisIndex& index = project_lhs[axis];
    const std::int64_t size = lhs_dims[axis];
    if (size <= 1) {
      if (size == 1 && !always_zero(*this, index)) return false;
      continue;
    }
    if (!index.is_iterator()) return false;
    const Symbol s = index.terms[0].symbol;
    const auto extent = extent_of(*this, s);
    if (!extent || *extent != size || !used.insert(s).second) return false;
  }
  return true;
}

bool Projections::is_injective() const {
  if (!well_formed(*this)) return false;
  // Pinning fixpoint: a position pins its residual (not yet pinned) symbols when they satisfy the
  // mixed-radix rule; injective iff every varying iterator ends up pinned.
  std::set<Symbol> pinned;
  bool progress = true;
  while (progress) {
    progress = false;
    for (const auto& index : project_lhs) {
      auto residual = varying_terms(*this, index);
      std::erase_if(residual, [&](const auto& kv) { return pinned.count(kv.first) > 0; });
      if (residual.empty() || !mixed_radix(*this, residual)) continue;
      for (const auto& kv : residual) pinned.insert(kv.first);
      progress = true;
    }
  }
  for (std::size_t i = 0; i < product_iterators.size(); ++i)
    if (product_space[i] > 1 && pinned.count(product_iterators[i]) == 0) return false;
  return true;
}

}  // namespace cannl::ir
