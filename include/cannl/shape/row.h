#pragma once
// Dimensions and rows: the atoms of shape inference (semantics-frontend.md 1.2-1.4).
//
// A dimension is either a variable or a solved size with a basis; only a size-1 dimension with the
// `bcast_if_1` basis stretches under broadcasting (the FLAT order of 1.4). A row is
// `beg · <var> · dims`: leading axes, an optional row variable standing for any number of middle
// axes, and trailing axes. A closed row keeps all its axes in `dims`.
//
//   Row r = Row::closed({Dim::solved(2), Dim::bcast_one()});  row_to_string(r) == "2,1"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cannl::shape {

/// The basis ("unit") of a solved dimension; see semantics 1.4.
enum class BasisKind : std::uint8_t { Default, Named, BcastIf1 };

/// `Basis{BasisKind::Named, "rgb"}` is a user-named axis; two bases are equal iff kind and name are.
struct Basis {
  BasisKind kind = BasisKind::Default;
  std::string name;
  friend bool operator==(const Basis&, const Basis&) = default;
  std::string to_string() const;  // "default", "bcast_if_1" or the name
  /// `default` and `bcast_if_1` carry no naming claim; a user-named basis does.
  bool is_reserved() const { return kind != BasisKind::Named; }
  static Basis named(std::string name) { return {BasisKind::Named, std::move(name)}; }
};

/// The basis of a dimension derived from several others (a convolution axis from its output and
/// kernel axes, a concatenation from its parts): a named basis wins over a reserved one, two
/// reserved ones give `default` (a derived axis makes no broadcast claim); nullopt when two
/// different named bases conflict.
///   merge_derived_basis(Basis::named("h"), Basis{}) == Basis::named("h")
std::optional<Basis> merge_derived_basis(const Basis& a, const Basis& b);

/// A dimension: `Dim::variable(7)` (unsolved, printed `$7`) or `Dim::solved(3)`.
struct Dim {
  int var = -1;           // >= 0: an unsolved dimension variable
  std::int64_t size = 0;  // when solved
  Basis basis;            // when solved
  // Where the dimension was written in an einsum spec (for error carets); not part of its value.
  int label_step = -1;
  int label_pos = -1;

  bool is_var() const { return var >= 0; }
  /// The broadcast top `1_(bcast_if_1)`: the only dimension that stretches.
  bool is_bcast_one() const { return !is_var() && size == 1 && basis.kind == BasisKind::BcastIf1; }
  /// Same variable, or same size and basis (provenance ignored).
  bool same_value(const Dim& other) const;

  static Dim variable(int v);
  static Dim solved(std::int64_t size, Basis basis = {});
  static Dim bcast_one();
};

/// A row of axes of one kind: `beg · <var> · dims`; `var < 0` means closed (exactly the axes).
struct Row {
  std::vector<Dim> beg;
  int var = -1;
  std::vector<Dim> dims;

  bool is_open() const { return var >= 0; }
  std::size_t num_explicit() const { return beg.size() + dims.size(); }
  /// All axes of a closed row, in order.
  std::vector<Dim> axes() const;

  static Row closed(std::vector<Dim> dims);
  static Row open(int var);
};

/// How solved dimensions print (semantics 1.6): `AxisSize` gives `3` or, for a user-named
/// basis, `rgb=3`; `OnlyBases` gives the basis of every axis (`default`, `bcast_if_1`, `rgb`).
enum class PrintStyle { AxisSize, OnlyBases };

/// `3`, `rgb=3`, `$7` (unsolved); with `PrintStyle::OnlyBases`: `default`, `rgb`, `$7`.
std::string dim_to_string(const Dim& d, PrintStyle style = PrintStyle::AxisSize);
/// Comma-separated axes; a row variable prints as `..$N..`, e.g. `2,..$4..,3`.
std::string row_to_string(const Row& r, PrintStyle style = PrintStyle::AxisSize);

}  // namespace cannl::shape
