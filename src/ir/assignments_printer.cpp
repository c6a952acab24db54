// Readable text of the Assignments IR (the `.cd` dumps), in the `%cd` notation of
// semantics-frontend.md 2.10: `=:` overwrite, `=+` accumulate, `=:+` reset then accumulate.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cannl/ir/assignments.h"

namespace cannl::ir {

std::string format_ir_number(double value) {
  // The shortest of %.15g..%.17g that reads back exactly: full precision without the noise of
  // "0.10000000000000001".
  char buffer[64];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
    if (std::isnan(value) || std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

namespace {

std::string accumulator_symbol(Op accum) {
  switch (accum) {
    case Op::Add: return "+";
    case Op::Sub: return "-";
    case Op::Mul: return "*";
    case Op::Div: return "/";
    case Op::Pow: return "**";
    case Op::ReluGate: return "?/";
    case Op::Satur01Gate: return "?^";
    case Op::Max: return "@^";
    case Op::Min: return "@-";
    case Op::Or: return "||";
    case Op::And: return "&&";
    default: return "<" + std::string(op_name(accum)) + ">";
  }
}

std::string assignment_operator(const AccumOp& a) {
  if (a.accum == Op::Arg2) return "=:";
  return (a.initialize_neutral ? "=:" : "=") + accumulator_symbol(a.accum);
}

std::string indexed(const NodeRef& node, const std::vector<AxisIndex>& index) {
  std::string out = node->debug_name();
  if (index.empty()) return out;
  out += "[";
  for (std::size_t i = 0; i < index.size(); ++i) out += (i ? ", " : "") + index[i].to_string();
  return out + "]";
}

std::string operand_text(const AccumOp& a, std::size_t i) {
  const Operand& arg = a.args[i];
  if (arg.is_constant()) return format_ir_number(arg.constant);
  static const std::vector<AxisIndex> kNone;
  const auto& rhs = a.projections.project_rhs;
  return indexed(arg.node, i < rhs.size() ? rhs[i] : kNone);
}

std::string infix_symbol(Op op) {
  switch (op) {
    case Op::Add: return " + ";
    case Op::Sub: return " - ";
    case Op::Mul: return " * ";
    case Op::Div: return " / ";
    case Op::Pow: return " ** ";
    default: return "";
  }
}

std::string rhs_text(const AccumOp& a) {
  std::vector<std::string> args;
  for (std::size_t i = 0; i < a.args.size(); ++i) args.push_back(operand_text(a, i));
  if (a.expr) return a.expr->to_string(args);
  if (a.op == Op::Identity && args.size() == 1) return args[0];
  const std::string infix = infix_symbol(a.op);
  if (!infix.empty() && args.size() == 2) return args[0] + infix + args[1];
  std::string out = std::string(op_name(a.op)) + "(";
  for (std::size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i];
  return out + ")";
}

std::string symbol_text(const StaticSymbol& s) {
  return s.name.empty() ? "i" + std::to_string(s.symbol.id) : s.name;
}

std::string fetch_text(const FetchOp& op) {
  struct Visitor {
    std::string operator()(const FetchConstant& c) const { return format_ir_number(c.value); }
    std::string operator()(const FetchConstantBits& c) const {
      return "bits(" + std::to_string(c.bits) + ")";
    }
    std::string operator()(const FetchConstantFill& c) const {
      std::string out = "[";
      for (std::size_t i = 0; i < c.values.size(); ++i)
        out += (i ? ", " : "") + format_ir_number(c.values[i]);
      return out + "]";
    }
    std::string operator()(const FetchRangeOverOffsets&) const { return "range_over_offsets"; }
    std::string operator()(const FetchSlice& s) const {
      return "slice(" + s.parent->debug_name() + ", " + symbol_text(s.batch_index) + ")";
    }
    std::string operator()(const FetchEmbedSymbol& e) const {
      return "embed_symbol(" + symbol_text(e.symbol) + ")";
    }
  };
  return std::visit(Visitor{}, op);
}

void print_body(const std::vector<AsgnRef>& body, const std::string& indent, std::string& out);

void print_one(const Asgn& a, const std::string& indent, std::string& out) {
  if (const auto* accum = std::get_if<AccumOp>(&a.node)) {
    out += indent + print_accum_op(*accum) + "\n";
  } else if (const auto* fetch = std::get_if<Fetch>(&a.node)) {
    out += indent + print_fetch(*fetch) + "\n";
  } else if (const auto* code = std::get_if<LoopCode>(&a.node)) {
    out += indent + print_loop_code(*code) + "\n";
  } else {
    const auto& block = std::get<BlockComment>(a.node);
    out += indent + "# " + block.text + "\n";
    print_body(block.body, indent + "  ", out);
  }
}

void print_body(const std::vector<AsgnRef>& body, const std::string& indent, std::string& out) {
  for (const auto& a : body) print_one(*a, indent, out);
}

}  // namespace

std::string print_accum_op(const AccumOp& op) {
  std::string out = indexed(op.lhs, op.projections.project_lhs) + " " + assignment_operator(op) +
                    " " + rhs_text(op);
  if (!op.projections.debug.empty()) out += "   # " + op.projections.debug;
  return out;
}

std::string print_fetch(const Fetch& fetch) {
  return fetch.node->debug_name() + " := " + fetch_text(fetch.op);
}

std::string print_loop_code(const LoopCode& code) {
  const auto names = [](const std::vector<NodeRef>& nodes) {
    std::string out;
    for (const auto& n : nodes) out += (out.empty() ? "" : ", ") + n->debug_name();
    return out;
  };
  return names(code.writes) + " := loop code " + code.label + "(" + names(code.reads) + ")";
}

std::string print_assignments(const Comp& comp) {
  std::string out;
  print_body(comp.body, "", out);
  return out;
}

}  // namespace cannl::ir
