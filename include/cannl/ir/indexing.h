#pragma once
// Loop symbols, axis indices and projections.
//
// Every axis index is affine: sum of coeff * symbol plus an offset. A fixed index has no terms; a
// plain iterator has one term with coefficient 1 and offset 0; convolutions use several terms
// (stride*o + dilation*k - pad).
//
//   Symbol i = fresh_symbol();  AxisIndex at = AxisIndex::iterator(i);  at.to_string() == "i7"

#include <cstdint>
#include <string>
#include <vector>

namespace cannl::ir {

/// A loop (or static) index variable. Ids are process-unique; printers rename them per routine.
struct Symbol {
  int id = -1;
  friend bool operator==(const Symbol&, const Symbol&) = default;
  friend auto operator<=>(const Symbol&, const Symbol&) = default;
};

Symbol fresh_symbol();

/// A symbol bound at run time rather than by a loop (e.g. the batch number of a training step).
/// `range` (> 0) bounds its values to [0, range); 0 means unknown.
struct StaticSymbol {
  Symbol symbol;
  std::int64_t range = 0;
  std::string name;  // for generated code and messages, e.g. "batch"
};

struct AffineTerm {
  std::int64_t coeff = 1;
  Symbol symbol;
  friend bool operator==(const AffineTerm&, const AffineTerm&) = default;
};

struct AxisIndex {
  std::vector<AffineTerm> terms;
  std::int64_t offset = 0;

  static AxisIndex fixed(std::int64_t value) { return {{}, value}; }
  static AxisIndex iterator(Symbol s) { return {{{1, s}}, 0}; }

  bool is_fixed() const { return terms.empty(); }
  bool is_iterator() const { return terms.size() == 1 && terms[0].coeff == 1 && offset == 0; }
  bool mentions(Symbol s) const;
  /// Replaces every occurrence of `from` by `to` (used to freshen loop symbols).
  AxisIndex renamed(Symbol from, Symbol to) const;
  std::string to_string() const;
  friend bool operator==(const AxisIndex&, const AxisIndex&) = default;
};

/// How one accumulating assignment iterates (semantics-frontend.md 4.1): a product space of loop
/// extents with one iterator each, and per tensor the index of every axis.
struct Projections {
  std::vector<std::int64_t> product_space;
  std::vector<Symbol> product_iterators;           // same length as product_space
  std::vector<std::int64_t> lhs_dims;              // logical dims of the LHS
  std::vector<std::vector<std::int64_t>> rhs_dims; // logical dims of each RHS
  std::vector<AxisIndex> project_lhs;              // one per LHS axis
  std::vector<std::vector<AxisIndex>> project_rhs; // one vector per RHS
  std::string debug;                               // e.g. the einsum spec it came from

  /// Every LHS cell is written (conservative; false when unsure).
  bool is_surjective() const;
  /// No two iterations write the same LHS cell (conservative; false when unsure).
  bool is_injective() const;
};

}  // namespace cannl::ir
