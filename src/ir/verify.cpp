// The loop-IR verifier (see verify.h). Run after lowering and after every pass in debug builds:
// a failure is a cannl bug, reported with the routine name and the offending statement printed.
#include "cannl/ir/verify.h"

#include <set>

#include "cannl/support/error.h"

namespace cannl::ir {

namespace {

bool is_integer(DType t) { return is_signed_int(t) || is_unsigned_int(t); }
bool is_threefry(Op op) { return op == Op::ThreefryCrypto || op == Op::ThreefryLight; }

/// Why `a` is ill-typed, or "" when it is fine (loop_ir.h typing rules).
std::string apply_type_problem(const Apply& a) {
  const std::string name(op_name(a.op));
  const std::string dt(dtype_name(a.dtype));
  if (static_cast<int>(a.args.size()) != op_arity(a.op))
    return name + " takes " + std::to_string(op_arity(a.op)) + " arguments, got " +
           std::to_string(a.args.size());
  if (is_threefry(a.op))
    return a.dtype == DType::U4x32 ? "" : name + " must compute in u4x32, not " + dt;
  if (a.op == Op::Uniform1) {
    const bool ok = a.args[0] && scalar_dtype(*a.args[0]) == DType::U4x32;
    return ok ? "" : "uniform1 needs a u4x32 argument";
  }
  if (a.dtype == DType::U4x32) {
    const bool ok = a.op == Op::Identity || a.op == Op::Arg1 || a.op == Op::Arg2 ||
                    a.op == Op::Where;
    return ok ? "" : name + " is not defined for u4x32";
  }
  if (is_integer(a.dtype) && op_c_int_spelling(a.op).empty())
    return name + " is not defined for integer type " + dt;
  if (is_float(a.dtype) && op_c_float_spelling(a.op).empty())
    return name + " is not defined for float type " + dt;
  return "";
}

class Verifier {
 public:
  explicit Verifier(const LoweredRoutine& r) : routine_(r) {
    for (const auto& s : r.statics) bound_.insert(s.symbol);
  }

  void stmt(const StmtRef& s) {
    internal_check(s != nullptr, [&] { return "verify(" + routine_.name + "): null statement"; });
    const StmtRef saved = at_;
    if (!std::holds_alternative<Seq>(s->node)) at_ = s;
    const bool keeps_scopes = std::holds_alternative<Seq>(s->node) || std::holds_alternative<DeclareLocal>(s->node);
    const auto saved_scopes = scopes_;
    std::visit([this](const auto& n) { visit(n); }, s->node);
    if (!keeps_scopes) scopes_ = saved_scopes;
    at_ = saved;
  }

 private:
  const LoweredRoutine& routine_;
  std::set<Symbol> bound_;
  std::set<int> scopes_;
  StmtRef at_;  // innermost non-Seq statement, printed in messages

  [[noreturn]] void fail(const std::string& what) const {
    std::string where = at_ ? print_stmt(at_) : std::string("<routine body>\n");
    if (where.size() > 2000) where = where.substr(0, 2000) + "...\n";
    throw InternalError("verify(" + routine_.name + "): " + what + "\n  in statement:\n" + where);
  }

  void symbols_bound(const AxisIndex& i) const {
    for (const auto& t : i.terms)
      if (bound_.count(t.symbol) == 0)
        fail("index " + i.to_string() + " uses symbol i" + std::to_string(t.symbol.id) +
             ", bound by no enclosing loop and no routine static");
  }

  void access(const NodeRef& n, const std::vector<AxisIndex>& index) const {
    if (!n) fail("access to a null node");
    if (index.size() != n->dims.size())
      fail("node " + n->debug_name() + " has rank " + std::to_string(n->dims.size()) +
           " but is indexed with " + std::to_string(index.size()) + " axes");
    for (std::size_t k = 0; k < index.size(); ++k) {
      symbols_bound(index[k]);
      if (index[k].is_fixed() && (index[k].offset < 0 || index[k].offset >= n->dims[k]))
        fail("fixed index " + std::to_string(index[k].offset) + " is outside [0, " +
             std::to_string(n->dims[k]) + ") on axis " + std::to_string(k) + " of node " +
             n->debug_name());
    }
  }

  void scope_declared(int id) const {
    if (scopes_.count(id) == 0)
      fail("local scope " + std::to_string(id) + " is not declared by an enclosing scope");
  }

  void scalar(const ScalarRef& s) {
    if (!s) fail("null scalar");
    std::visit([this](const auto& n) { check(n); }, s->node);
  }

  // ---- statements ----
  void visit(const Seq& s) {
    const auto saved = scopes_;  // DeclareLocal is visible to later statements of its sequence
    for (const auto& c : s.stmts) stmt(c);
    scopes_ = saved;
  }
  void visit(const Comment&) {}
  void visit(const For& f) {
    if (f.end < f.begin)
      fail("loop bounds [" + std::to_string(f.begin) + ", " + std::to_string(f.end) +
           ") have end < begin");
    if (!bound_.insert(f.index).second)
      fail("loop rebinds symbol i" + std::to_string(f.index.id) +
           ", already bound by an enclosing loop or a static");
    stmt(f.body);
    bound_.erase(f.index);
  }
  void visit(const ZeroOut& z) {
    if (!z.node) fail("zero_out of a null node");
  }
  void visit(const Set& s) {
    access(s.node, s.index);
    scalar(s.value);
  }
  void visit(const SetLocal& s) {
    scope_declared(s.scope_id);
    scalar(s.value);
  }
  void visit(const DeclareLocal& d) { scopes_.insert(d.scope_id); }
  void visit(const If& i) {
    scalar(i.condition);
    stmt(i.body);
  }
  void visit(const SetDynamic& s) {
    dynamic_access(s.node, s.index, s.dyn_axis, s.dyn_value);
    if (!s.value) fail("set_dynamic of a null value");
    scalar(s.value);
  }
  void visit(const Barrier&) {}
  // The descriptor must describe the fallback; checking its accesses here catches stale
  // descriptors (a symbol the fallback no longer binds) before a renderer trusts them.
  void visit(const TileMma& t) {
    if (!t.fallback) fail("tile_mma without a fallback");
    for (const TileAxis* x : t.axes()) {
      if (x->end < x->begin) fail("tile_mma axis with end < begin");
      if (!bound_.insert(x->symbol).second) fail("tile_mma rebinds an enclosing loop symbol");
    }
    access(t.d.node, t.d.index);
    access(t.a.node, t.a.index);
    access(t.b.node, t.b.index);
    for (const TileAxis* x : t.axes()) bound_.erase(x->symbol);
    stmt(t.fallback);
  }
  // A dynamic access: a valid axis whose placeholder index is fixed 0, and a non-u4x32 row value.
  void dynamic_access(const NodeRef& n, const std::vector<AxisIndex>& index, int axis,
                      const ScalarRef& row) {
    access(n, index);
    if (axis < 0 || static_cast<std::size_t>(axis) >= index.size())
      fail("dynamic axis " + std::to_string(axis) + " is outside the rank of node " +
           n->debug_name());
    if (!(index[static_cast<std::size_t>(axis)] == AxisIndex::fixed(0)))
      fail("the placeholder index of dynamic axis " + std::to_string(axis) + " of node " +
           n->debug_name() + " must be fixed 0");
    if (!row) fail("dynamic access with a null row value");
    if (scalar_dtype(*row) == DType::U4x32) fail("a dynamic row value cannot be u4x32");
    scalar(row);
  }

  // ---- scalars ----
  void check(const Constant&) {}
  void check(const ConstantBits&) {}
  void check(const Get& g) { access(g.node, g.index); }
  // A scope's local stays readable for the rest of its statement (CSE reads an earlier scope's
  // local), never in a sibling statement: stmt() restores the declared scopes after each one.
  void check(const LocalScope& l) {
    const auto saved = scopes_;
    scopes_.insert(l.scope_id);
    stmt(l.body);
    scopes_ = saved;
    scopes_.insert(l.scope_id);
  }
  void check(const GetLocal& l) { scope_declared(l.scope_id); }
  void check(const EmbedIndex& e) { symbols_bound(e.index); }
  void check(const GetDynamic& g) { dynamic_access(g.node, g.index, g.dyn_axis, g.dyn_value); }
  void check(const Apply& a) {
    const std::string problem = apply_type_problem(a);
    if (!problem.empty()) fail(problem);
    for (const auto& x : a.args) scalar(x);
  }
};

}  // namespace

void verify(const LoweredRoutine& routine) {
  Verifier(routine).stmt(routine.body);
}

}  // namespace cannl::ir
