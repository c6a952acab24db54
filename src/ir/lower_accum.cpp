// Lowering of one accumulating assignment (semantics-backend.md 3.3 steps 2-5):
//
//   [neutral fill of the LHS]         when initialize_neutral and not (surjective and injective)
//   [margin resets of padded args]    when an arg's pad value is not the accumulator's neutral
//   for i0 ...: for i1 ...:           one loop per product axis of extent != 1, fresh symbols
//     lhs[..] = op(args)              plain store (reset + bijective, or accum == Arg2)
//     lhs[..] = accum(neutral, op(args))   reset + bijective when accum(neutral, v) != v (sub, div)
//     lhs[..] = accum(lhs[..], op(args))   otherwise
#include <map>
#include <optional>
#include <set>

#include "cannl/ir/assignments.h"
#include "cannl/support/error.h"
#include "lower_cells.h"
#include "lower_parts.h"

namespace cannl::ir::lowering {

namespace {

/// Product iterator -> fresh loop symbol, or nullopt for an extent-1 axis (index 0, no loop).
using Renaming = std::map<Symbol, std::optional<Symbol>>;

AxisIndex substitute(const AxisIndex& index, const Renaming& renaming) {
  AxisIndex result{{}, index.offset};
  for (const auto& t : index.terms) {
    const auto it = renaming.find(t.symbol);
    if (it == renaming.end()) {
      result.terms.push_back(t);  // a static symbol: bound by the routine
    } else if (it->second) {
      result.terms.push_back({t.coeff, *it->second});
    }
  }
  return result;
}

std::vector<AxisIndex> substitute_all(const std::vector<AxisIndex>& index, const Renaming& r) {
  std::vector<AxisIndex> result;
  for (const auto& i : index) result.push_back(substitute(i, r));
  return result;
}

void check_shape(const AccumOp& a, const std::string& text) {
  const auto& p = a.projections;
  const bool arity_ok = a.expr || static_cast<int>(a.args.size()) == op_arity(a.op);
  const bool ok = a.lhs != nullptr && arity_ok &&
                  p.project_rhs.size() == a.args.size() &&
                  p.product_space.size() == p.product_iterators.size();
  if (!ok)
    throw InternalError("lowering `" + text + "`: malformed assignment (op " +
                        std::string(op_name(a.op)) + " has arity " +
                        std::to_string(op_arity(a.op)) + ", got " + std::to_string(a.args.size()) +
                        " arguments and " + std::to_string(p.project_rhs.size()) +
                        " RHS projections; " + std::to_string(p.product_space.size()) +
                        " product axes for " + std::to_string(p.product_iterators.size()) +
                        " iterators)");
}

bool is_threefry(Op op) { return op == Op::ThreefryCrypto || op == Op::ThreefryLight; }

/// How each iteration writes its LHS cell.
enum class Update {
  Accumulate,      // lhs = accum(lhs, rhs)
  Store,           // lhs = rhs
  StoreFromReset,  // lhs = accum(neutral, rhs): a reset cell written once
};

/// accum(neutral, v) == v for every v, so a reset cell written once may take v itself. Not so
/// for sub (0 - v), div (1 / v), pow (1 ** v) and the predicates or / and (v != 0).
bool neutral_is_left_identity(Op accum) {
  switch (accum) {
    case Op::Add: case Op::Mul: case Op::Max: case Op::Min: case Op::ReluGate:
    case Op::Satur01Gate: case Op::Arg2:
      return true;
    default:
      return false;
  }
}

/// A general right-hand side (gradient rules, initializers): every op computes in `dt`, like
/// op(args), except threefry, which computes on 128-bit values; its constant operands (keys) are
/// f64 so integer keys up to 2^53 convert to uint4x32 exactly.
ScalarRef expression_value(const RhsExpr& e, const std::vector<ScalarRef>& args, DType dt) {
  if (e.kind == RhsExpr::Kind::Apply && is_threefry(e.op)) {
    std::vector<ScalarRef> children;
    for (const auto& c : e.children) children.push_back(expression_value(*c, args, DType::F64));
    return apply(e.op, DType::U4x32, std::move(children));
  }
  switch (e.kind) {
    case RhsExpr::Kind::Arg:
      internal_check(e.arg >= 0 && static_cast<std::size_t>(e.arg) < args.size(),
                     [&] { return "lowering: expression argument $" + std::to_string(e.arg) + " out of range"; });
      return args[static_cast<std::size_t>(e.arg)];
    case RhsExpr::Kind::Constant: return constant(e.value, dt);
    case RhsExpr::Kind::Apply: break;
  }
  std::vector<ScalarRef> children;
  for (const auto& c : e.children) children.push_back(expression_value(*c, args, dt));
  if (e.op == Op::Identity && children.size() == 1) return children[0];
  return apply(e.op, dt, std::move(children));
}

ScalarRef rhs_value(const AccumOp& a, const Renaming& r, DType dt, const std::string& text) {
  std::vector<ScalarRef> args;
  for (std::size_t i = 0; i < a.args.size(); ++i) {
    const Operand& arg = a.args[i];
    if (arg.is_constant()) {
      args.push_back(constant(arg.constant, dt));
      continue;
    }
    const auto index = substitute_all(a.projections.project_rhs[i], r);
    args.push_back(get(arg.node, buffer_index(*arg.node, index, text)));
  }
  if (a.expr) return expression_value(*a.expr, args, dt);
  if (a.op == Op::Identity) return args[0];
  return apply(a.op, is_threefry(a.op) ? DType::U4x32 : dt, std::move(args));
}

/// The assignment as the comment of the statements it lowers to, its index symbols named i0, i1,
/// ... in order of first appearance: the lowered routine then depends only on the program, not on
/// how many symbols were minted before it (a schedule trace's digest, a compile cache key).
std::string comment_text(const AccumOp& a) {
  std::map<Symbol, Symbol> names;
  auto rename = [&names](std::vector<AxisIndex>& index) {
    for (auto& axis : index)
      for (auto& t : axis.terms)
        t.symbol = names.try_emplace(t.symbol, Symbol{static_cast<int>(names.size())}).first->second;
  };
  AccumOp named = a;
  rename(named.projections.project_lhs);
  for (auto& rhs : named.projections.project_rhs) rename(rhs);
  return print_accum_op(named);
}

/// `text` names the assignment in error messages (as the .cd dump does), `comment` in the code.
StmtRef accumulation_loops(const AccumOp& a, Update update, const std::string& text, const std::string& comment) {
  const auto& p = a.projections;
  Renaming renaming;
  std::vector<std::pair<Symbol, std::int64_t>> loops;
  for (std::size_t i = 0; i < p.product_space.size(); ++i) {
    if (p.product_space[i] == 1) {
      renaming[p.product_iterators[i]] = std::nullopt;
      continue;
    }
    const Symbol s = fresh_symbol();
    renaming[p.product_iterators[i]] = s;
    loops.emplace_back(s, p.product_space[i]);
  }
  const DType dt = compute_dtype(a.lhs->dtype);
  const auto lhs_index = buffer_index(*a.lhs, substitute_all(p.project_lhs, renaming), text);
  ScalarRef value = rhs_value(a, renaming, dt, text);
  if (update == Update::Accumulate) value = apply(a.accum, dt, {get(a.lhs, lhs_index), value});
  if (update == Update::StoreFromReset)
    value = apply(a.accum, dt, {constant(op_neutral(a.accum), dt), value});
  StmtRef stmt = set(a.lhs, lhs_index, value, comment);
  for (auto it = loops.rbegin(); it != loops.rend(); ++it)
    stmt = for_loop(it->first, 0, it->second, stmt);
  return stmt;
}

StmtRef fill_neutral(const NodeRef& lhs, double neutral, const std::string& comment) {
  const bool margins_may_be_zero = !lhs->is_padded() || !lhs->pad_value || *lhs->pad_value == 0;
  if (neutral == 0 && margins_may_be_zero) return zero_out(lhs);
  return fill_logical(lhs, constant(neutral, compute_dtype(lhs->dtype)), comment);
}

/// Margins of padded operands must hold the accumulator's neutral element, so that reading them
/// (a convolution's out-of-range taps) contributes nothing.
void reset_operand_margins(const AccumOp& a, double neutral, std::vector<StmtRef>& out) {
  std::set<int> done;
  for (const auto& arg : a.args) {
    const NodeRef& n = arg.node;
    if (!n || !n->is_padded() || !done.insert(n->id).second) continue;
    if (n->pad_value && *n->pad_value == neutral) continue;
    const std::string why = "reset margins of " + n->debug_name() + " to " +
                            format_ir_number(neutral) + " for " + std::string(op_name(a.accum));
    if (auto fill = fill_margins(n, constant(neutral, compute_dtype(n->dtype)), why))
      out.push_back(fill);
  }
}

}  // namespace

void lower_accum(const AccumOp& a, std::vector<StmtRef>& out) {
  const std::string text = a.lhs ? print_accum_op(a) : "<assignment without LHS>";
  check_shape(a, text);
  const std::string comment = comment_text(a);
  const auto& p = a.projections;
  const bool bijective = p.is_surjective() && p.is_injective();
  const double neutral = op_neutral(a.accum);
  if (a.initialize_neutral && !bijective) out.push_back(fill_neutral(a.lhs, neutral, comment));
  reset_operand_margins(a, neutral, out);
  Update update = Update::Accumulate;
  if (a.accum == Op::Arg2) update = Update::Store;
  else if (a.initialize_neutral && bijective)
    update = neutral_is_left_identity(a.accum) ? Update::Store : Update::StoreFromReset;
  out.push_back(accumulation_loops(a, update, text, comment));
}

}  // namespace cannl::ir::lowering
