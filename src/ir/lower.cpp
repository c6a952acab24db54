// lower(): Assignments IR -> loop IR, one statement at a time in program order
// (semantics-backend.md 3.3). Block comments become a Comment followed by their lowered body.
#include "cannl/ir/lower.h"

#include "cannl/support/error.h"
#include "lower_parts.h"

namespace cannl::ir {

namespace {

void lower_body(const std::vector<AsgnRef>& body, std::vector<StmtRef>& out);

void lower_one(const Asgn& a, std::vector<StmtRef>& out) {
  if (const auto* accum = std::get_if<AccumOp>(&a.node)) {
    lowering::lower_accum(*accum, out);
  } else if (const auto* fetch = std::get_if<Fetch>(&a.node)) {
    lowering::lower_fetch(*fetch, out);
  } else if (const auto* code = std::get_if<LoopCode>(&a.node)) {
    lowering::lower_loop_code(*code, out);
  } else {
    const auto& block = std::get<BlockComment>(a.node);
    std::vector<StmtRef> inner{comment(block.text)};
    lower_body(block.body, inner);
    out.push_back(seq(std::move(inner)));
  }
}

void lower_body(const std::vector<AsgnRef>& body, std::vector<StmtRef>& out) {
  for (const auto& a : body) {
    internal_check(a != nullptr, "lower: null assignment");
    lower_one(*a, out);
  }
}

}  // namespace

LoweredRoutine lower(const Comp& comp, const std::string& name) {
  std::vector<StmtRef> out;
  lower_body(comp.body, out);
  return LoweredRoutine{name, seq(std::move(out)), comp.statics};
}

}  // namespace cannl::ir
