// Dimensions and rows: constructors, value equality and printing (semantics-frontend.md 1.3-1.6).

#include "cannl/shape/row.h"

namespace cannl::shape {

std::string Basis::to_string() const {
  switch (kind) {
    case BasisKind::Default: return "default";
    case BasisKind::BcastIf1: return "bcast_if_1";
    case BasisKind::Named: return name;
  }
  return "?";
}

std::optional<Basis> merge_derived_basis(const Basis& a, const Basis& b) {
  // A derived axis (of any size) makes no broadcast claim: without a name it is `default`.
  if (a.is_reserved() && b.is_reserved()) return Basis{};
  if (a == b || b.is_reserved()) return a;
  if (a.is_reserved()) return b;
  return std::nullopt;
}

bool Dim::same_value(const Dim& other) const {
  if (is_var() || other.is_var()) return var == other.var;
  return size == other.size && basis == other.basis;
}

Dim Dim::variable(int v) {
  Dim d;
  d.var = v;
  return d;
}

Dim Dim::solved(std::int64_t size, Basis basis) {
  Dim d;
  d.size = size;
  d.basis = std::move(basis);
  return d;
}

Dim Dim::bcast_one() { return solved(1, Basis{BasisKind::BcastIf1, {}}); }

std::vector<Dim> Row::axes() const {
  std::vector<Dim> out = beg;
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

Row Row::closed(std::vector<Dim> dims) {
  Row r;
  r.dims = std::move(dims);
  return r;
}

Row Row::open(int var) {
  Row r;
  r.var = var;
  return r;
}

std::string dim_to_string(const Dim& d, PrintStyle style) {
  if (d.is_var()) return "$" + std::to_string(d.var);
  if (style == PrintStyle::OnlyBases) return d.basis.to_string();
  if (d.basis.kind == BasisKind::Named) return d.basis.name + "=" + std::to_string(d.size);
  return std::to_string(d.size);
}

std::string row_to_string(const Row& r, PrintStyle style) {
  std::string out;
  auto add = [&out](const std::string& s) {
    if (!out.empty()) out += ",";
    out += s;
  };
  for (const auto& d : r.beg) add(dim_to_string(d, style));
  if (r.is_open()) add(".." + ("$" + std::to_string(r.var)) + "..");
  for (const auto& d : r.dims) add(dim_to_string(d, style));
  return out;
}

}  // namespace cannl::shape
