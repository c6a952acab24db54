#pragma once
// Small builders shared by the ir tests: projections over fresh iterators, and loop-IR text
// without the per-statement comments (those carry process-global symbol ids).

#include <regex>
#include <string>
#include <vector>

#include "cannl/ir/assignments.h"
#include "cannl/ir/indexing.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/ir/lower.h"
#include "cannl/ir/verify.h"

namespace cannl::ir::testing {

inline AxisIndex it(Symbol s) { return AxisIndex::iterator(s); }
inline AxisIndex fx(std::int64_t v) { return AxisIndex::fixed(v); }

/// Projections over `space` (one fresh iterator per entry, returned in `iters`).
inline Projections projections(std::vector<std::int64_t> space, std::vector<Symbol>& iters) {
  Projections p;
  p.product_space = std::move(space);
  iters.clear();
  for (std::size_t k = 0; k < p.product_space.size(); ++k) iters.push_back(fresh_symbol());
  p.product_iterators = iters;
  return p;
}

/// Removes the trailing `   # ...` comment of every statement line (comment-only lines stay).
inline std::string strip_comments(const std::string& text) {
  static const std::regex trailing("   # [^\n]*");
  return std::regex_replace(text, trailing, "");
}

/// Loop IR of a comp without the header line and without statement comments. Lowered code must
/// always pass the verifier, so this checks that too.
inline std::string lowered_text(const Comp& comp) {
  const auto routine = lower(comp, "t");
  verify(routine);
  const std::string text = print_loop_ir(routine);
  return strip_comments(text.substr(text.find('\n') + 1));
}

}  // namespace cannl::ir::testing
