// Constructors of Assignments-IR statements and the two data-flow queries over a Comp:
// which nodes a routine reads before initializing them (its inputs) and which it writes.
#include "cannl/ir/assignments.h"

#include <set>

#include "cannl/support/error.h"

namespace cannl::ir {

namespace {

/// Checks a general right-hand side: op arities and argument references in range.
void check_rhs_expr(const RhsExpr& e, std::size_t num_args, const std::string& lhs) {
  if (e.kind == RhsExpr::Kind::Arg)
    internal_check(e.arg >= 0 && static_cast<std::size_t>(e.arg) < num_args, [&] {
      return "make_accum: expression argument $" + std::to_string(e.arg) + " but only " + std::to_string(num_args) +
             " operands (LHS " + lhs + ")";
    });
  if (e.kind != RhsExpr::Kind::Apply) return;
  internal_check(static_cast<int>(e.children.size()) == op_arity(e.op), [&] {
    return "make_accum: " + std::string(op_name(e.op)) + " takes " + std::to_string(op_arity(e.op)) +
           " arguments, got " + std::to_string(e.children.size()) + " (LHS " + lhs + ")";
  });
  for (const auto& c : e.children) {
    internal_check(c != nullptr, [&] { return "make_accum: null sub-expression (LHS " + lhs + ")"; });
    check_rhs_expr(*c, num_args, lhs);
  }
}

}  // namespace

AsgnRef make_accum(AccumOp op) {
  internal_check(op.lhs != nullptr, "make_accum: null LHS node");
  const std::string lhs = op.lhs->debug_name();
  if (op.expr) {
    check_rhs_expr(*op.expr, op.args.size(), lhs);
  } else {
    internal_check(static_cast<int>(op.args.size()) == op_arity(op.op), [&] {
      return "make_accum: " + std::string(op_name(op.op)) + " takes " + std::to_string(op_arity(op.op)) +
             " arguments, got " + std::to_string(op.args.size()) + " (LHS " + lhs + ")";
    });
  }
  return std::make_shared<const Asgn>(Asgn{std::move(op)});
}

AsgnRef make_fetch(NodeRef node, FetchOp op) {
  internal_check(node != nullptr, "make_fetch: null node");
  return std::make_shared<const Asgn>(Asgn{Fetch{std::move(node), std::move(op)}});
}

AsgnRef make_block(std::string text, std::vector<AsgnRef> body) {
  return std::make_shared<const Asgn>(Asgn{BlockComment{std::move(text), std::move(body)}});
}

AsgnRef make_loop_code(LoopCode code) {
  internal_check(code.body != nullptr, [&] { return "make_loop_code: no body for " + code.label; });
  return std::make_shared<const Asgn>(Asgn{std::move(code)});
}

namespace {

/// Walks statements in program order, tracking which nodes hold defined values.
class InitializationWalk {
 public:
  std::vector<NodeRef> inputs;
  std::vector<NodeRef> written;

  void walk(const std::vector<AsgnRef>& body) {
    for (const auto& a : body) std::visit([this](const auto& n) { visit(n); }, a->node);
  }

 private:
  std::set<int> initialized_;
  std::set<int> seen_input_;
  std::set<int> seen_written_;

  void read(const NodeRef& n) {
    if (!n || initialized_.count(n->id) > 0) return;
    if (seen_input_.insert(n->id).second) inputs.push_back(n);
  }
  void write(const NodeRef& n) {
    initialized_.insert(n->id);
    if (seen_written_.insert(n->id).second) written.push_back(n);
  }

  void visit(const AccumOp& a) {
    for (const auto& arg : a.args) read(arg.node);
    // Without a reset the LHS is accumulated onto, unless a plain store covers every cell.
    const bool overwrites_all = a.accum == Op::Arg2 && a.projections.is_surjective();
    if (!a.initialize_neutral && !overwrites_all) read(a.lhs);
    write(a.lhs);
  }
  void visit(const Fetch& f) {
    if (const auto* slice = std::get_if<FetchSlice>(&f.op)) read(slice->parent);
    write(f.node);
  }
  void visit(const BlockComment& b) { walk(b.body); }
  void visit(const LoopCode& c) {
    for (const auto& n : c.reads) read(n);
    for (const auto& n : c.writes) write(n);
  }
};

}  // namespace

std::vector<NodeRef> read_before_initialized(const Comp& comp) {
  InitializationWalk walk;
  walk.walk(comp.body);
  return walk.inputs;
}

std::vector<NodeRef> written_nodes(const Comp& comp) {
  InitializationWalk walk;
  walk.walk(comp.body);
  return walk.written;
}

}  // namespace cannl::ir
