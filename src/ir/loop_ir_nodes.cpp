// nodes_of: the nodes with storage a loop-IR statement or scalar touches, in first-occurrence
// order (textual order: a Set's target before its value).
#include <set>

#include "cannl/ir/loop_ir.h"

namespace cannl::ir {

namespace {

class NodeCollector {
 public:
  std::vector<NodeRef> nodes;

  void stmt(const StmtRef& s) {
    if (s) std::visit([this](const auto& n) { visit(n); }, s->node);
  }
  void scalar(const ScalarRef& s) {
    if (s) std::visit([this](const auto& n) { visit(n); }, s->node);
  }

 private:
  std::set<int> seen_;

  void add(const NodeRef& n) {
    if (n && seen_.insert(n->id).second) nodes.push_back(n);
  }
  // statements
  void visit(const Seq& s) { for (const auto& c : s.stmts) stmt(c); }
  void visit(const Comment&) {}
  void visit(const For& f) { stmt(f.body); }
  void visit(const ZeroOut& z) { add(z.node); }
  void visit(const Set& s) { add(s.node); scalar(s.value); }
  void visit(const SetLocal& s) { scalar(s.value); }
  void visit(const DeclareLocal&) {}
  void visit(const If& i) { scalar(i.condition); stmt(i.body); }
  void visit(const SetDynamic& s) { add(s.node); scalar(s.dyn_value); scalar(s.value); }
  void visit(const Barrier&) {}
  void visit(const TileMma& t) { stmt(t.fallback); }
  // scalars
  void visit(const Constant&) {}
  void visit(const ConstantBits&) {}
  void visit(const Get& g) { add(g.node); }
  void visit(const LocalScope& l) { stmt(l.body); }
  void visit(const GetLocal&) {}
  void visit(const EmbedIndex&) {}
  void visit(const Apply& a) { for (const auto& x : a.args) scalar(x); }
  void visit(const GetDynamic& g) { add(g.node); scalar(g.dyn_value); }
};

}  // namespace

std::vector<NodeRef> nodes_of(const StmtRef& stmt) {
  NodeCollector c;
  c.stmt(stmt);
  return c.nodes;
}

std::vector<NodeRef> nodes_of(const ScalarRef& scalar) {
  NodeCollector c;
  c.scalar(scalar);
  return c.nodes;
}

}  // namespace cannl::ir
