#include "cannl/ir/indexing.h"

#include <atomic>

namespace cannl::ir {

Symbol fresh_symbol() {
  static std::atomic<int> next{1};
  return Symbol{next++};
}

bool AxisIndex::mentions(Symbol s) const {
  for (const auto& t : terms)
    if (t.symbol == s) return true;
  return false;
}

AxisIndex AxisIndex::renamed(Symbol from, Symbol to) const {
  AxisIndex result = *this;
  for (auto& t : result.terms)
    if (t.symbol == from) t.symbol = to;
  return result;
}

std::string AxisIndex::to_string() const {
  std::string out;
  for (const auto& t : terms) {
    if (!out.empty()) out += t.coeff < 0 ? " - " : " + ";
    else if (t.coeff < 0) out += "-";
    const auto magnitude = t.coeff < 0 ? -t.coeff : t.coeff;
    if (magnitude != 1) out += std::to_string(magnitude) + "*";
    out += "i" + std::to_string(t.symbol.id);
  }
  if (out.empty()) return std::to_string(offset);
  if (offset > 0) out += " + " + std::to_string(offset);
  if (offset < 0) out += " - " + std::to_string(-offset);
  return out;
}

}  // namespace cannl::ir
