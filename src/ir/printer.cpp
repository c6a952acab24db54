// Readable text of the loop IR (the `.ll` dumps):
//
//   # train_step (statics: batch)
//   for i0 in [0, 64):
//     c[i0] = add(a[i0], b[i0])   # c[i0] =: a[i0] + b[i0]
//
// Names are per printout so dumps are stable across runs: loop symbols i0, i1, ... in order of
// first binding, statics by their name, locals v0, v1, ..., nodes by label, with a `#k` suffix (k
// the node's position in order of first appearance) when two nodes of the printout share a label
// or a node has none.
#include <algorithm>
#include <map>

#include "cannl/ir/assignments.h"
#include "cannl/ir/loop_ir.h"

namespace cannl::ir {

namespace {

class LoopIrPrinter {
 public:
  // A node whose label is shared with another node of the printout, or empty, is named by its
  // position among the printout's nodes in order of first appearance (`m#3`, `n#0`), never by its
  // id: the same program built again (ids taken in another order, another process) prints, and so
  // digests, the same (schedule traces and the tuner's schedule cache key on the digest).
  explicit LoopIrPrinter(const std::vector<NodeRef>& nodes) {
    std::map<std::string, int> label_count;
    for (const auto& n : nodes) ++label_count[n->label];
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      const auto& n = nodes[k];
      const bool unique = !n->label.empty() && label_count[n->label] == 1;
      node_names_[n->id] = unique ? n->label : (n->label.empty() ? "n" : n->label) + "#" + std::to_string(k);
    }
  }

  void bind_static(const StaticSymbol& s) {
    symbol_names_[s.symbol] = s.name.empty() ? "s" + std::to_string(s.symbol.id) : s.name;
  }

  void stmt(const StmtRef& s, const std::string& indent, std::string& out) {
    if (!s) return;
    std::visit([&](const auto& n) { visit(n, indent, out); }, s->node);
  }

  std::string scalar(const ScalarRef& s, const std::string& indent) {
    if (!s) return "<null>";
    return std::visit([&](const auto& n) { return show(n, indent); }, s->node);
  }

 private:
  std::map<int, std::string> node_names_;
  std::map<Symbol, std::string> symbol_names_;
  std::map<int, std::string> local_names_;
  int next_loop_ = 0;

  std::string node(const NodeRef& n) {
    const auto it = node_names_.find(n->id);
    return it != node_names_.end() ? it->second : n->debug_name();
  }
  std::string symbol(Symbol s) {
    const auto it = symbol_names_.find(s);
    return it != symbol_names_.end() ? it->second : "?i" + std::to_string(s.id);
  }
  std::string bind_loop(Symbol s) {
    const auto it = symbol_names_.find(s);
    if (it != symbol_names_.end()) return it->second;
    return symbol_names_[s] = "i" + std::to_string(next_loop_++);
  }
  std::string local(int scope_id) {
    const auto it = local_names_.find(scope_id);
    if (it != local_names_.end()) return it->second;
    const std::string name = "v" + std::to_string(local_names_.size());
    return local_names_[scope_id] = name;
  }

  std::string index(const AxisIndex& i) {
    std::string out;
    for (const auto& t : i.terms) {
      if (!out.empty()) out += t.coeff < 0 ? " - " : " + ";
      else if (t.coeff < 0) out += "-";
      const auto magnitude = t.coeff < 0 ? -t.coeff : t.coeff;
      if (magnitude != 1) out += std::to_string(magnitude) + "*";
      out += symbol(t.symbol);
    }
    if (out.empty()) return std::to_string(i.offset);
    if (i.offset > 0) out += " + " + std::to_string(i.offset);
    if (i.offset < 0) out += " - " + std::to_string(-i.offset);
    return out;
  }
  std::string access(const NodeRef& n, const std::vector<AxisIndex>& idx) {
    std::string out = node(n);
    if (idx.empty()) return out;
    out += "[";
    for (std::size_t k = 0; k < idx.size(); ++k) out += (k ? ", " : "") + index(idx[k]);
    return out + "]";
  }
  static std::string dtype_suffix(DType t, DType usual) {
    return t == usual ? "" : ":" + std::string(dtype_name(t));
  }

  // ---- statements ----
  void visit(const Seq& s, const std::string& indent, std::string& out) {
    for (const auto& c : s.stmts) stmt(c, indent, out);
  }
  void visit(const Comment& c, const std::string& indent, std::string& out) {
    out += indent + "# " + c.text + "\n";
  }
  void visit(const For& f, const std::string& indent, std::string& out) {
    out += indent + "for " + bind_loop(f.index) + " in [" + std::to_string(f.begin) + ", " +
           std::to_string(f.end) + ")" +
           (f.axis == AxisType::Serial ? "" : " " + std::string(axis_type_name(f.axis))) +
           (f.chunks != 0 ? " chunks " + std::to_string(f.chunks) : "") +
           (f.team != 0 ? " team " + std::to_string(f.team) : "") + ":\n";
    stmt(f.body, indent + "  ", out);
  }
  void visit(const ZeroOut& z, const std::string& indent, std::string& out) {
    out += indent + "zero_out " + node(z.node) + "\n";
  }
  void visit(const Set& s, const std::string& indent, std::string& out) {
    // Sequenced so names are handed out left to right whatever the compiler's evaluation order.
    out += indent + access(s.node, s.index) + " = ";
    out += scalar(s.value, indent);
    out += (s.comment.empty() ? "" : "   # " + s.comment) + "\n";
  }
  void visit(const SetLocal& s, const std::string& indent, std::string& out) {
    out += indent + local(s.scope_id) + " := ";
    out += scalar(s.value, indent) + "\n";
  }
  void visit(const DeclareLocal& d, const std::string& indent, std::string& out) {
    out += indent + "declare " + local(d.scope_id) + ":" + std::string(dtype_name(d.dtype)) +
           (d.needs_init ? " = 0" : "") + "\n";
  }
  void visit(const If& i, const std::string& indent, std::string& out) {
    out += indent + "if ";
    out += scalar(i.condition, indent) + ":\n";
    stmt(i.body, indent + "  ", out);
  }
  // node[i0, ?dyn := ids[i0]] op= value
  void visit(const SetDynamic& s, const std::string& indent, std::string& out) {
    out += indent + dynamic_access(s.node, s.index, s.dyn_axis, s.dyn_value, indent) + " " +
           std::string(op_name(s.accum)) + "= ";
    out += scalar(s.value, indent);
    out += (s.comment.empty() ? "" : "   # " + s.comment) + "\n";
  }
  void visit(const Barrier&, const std::string& indent, std::string& out) {
    out += indent + "barrier\n";
  }
  static std::string blocking(const TileBlocking& b) {
    if (!b.blocked()) return "";
    return " (blocks " + std::to_string(b.bm) + "x" + std::to_string(b.bn) + "x" + std::to_string(b.bk) +
           (b.tensor_cores() ? ", warps " : ", threads ") + std::to_string(b.tm) + "x" + std::to_string(b.tn) +
           (b.tensor_cores() ? ", tensor cores " + std::string(narrow_format_name(b.mma)) : "") +
           (b.async_copy ? ", 2 stages by async copies" : "") + ")";
  }
  // tile_mma i0 in [0, 4), i1 in [0, 4), i2 in [0, 8): c[i0, i1] add= a[i0, i2] * b[i2, i1]
  // followed by its fallback, indented. The tile symbols are named first so the fallback's loops
  // reuse those names.
  void visit(const TileMma& t, const std::string& indent, std::string& out) {
    out += indent + "tile_mma";
    for (const TileAxis* x : t.axes())
      out += std::string(x == &t.i ? " " : ", ") + bind_loop(x->symbol) + " in [" +
             std::to_string(x->begin) + ", " + std::to_string(x->end) + ")";
    if (t.folded())
      out += " (folded: " + std::to_string(t.outer_i.size()) + " rows, " + std::to_string(t.outer_j.size()) +
             " columns, " + std::to_string(t.outer_k.size()) + " steps)";
    out += ": " + access(t.d.node, t.d.index) + " " +
           (t.fused ? std::string("fma") : std::string(op_name(t.accum))) + "= " +
           access(t.a.node, t.a.index) + " * " + access(t.b.node, t.b.index) +
           dtype_suffix(t.dtype, DType::F32) + (t.zero_start ? " (zero start)" : "") +
           (t.team != 1 ? " (team " + std::to_string(t.team) + ")" : "") + blocking(t.blocking) + "\n";
    stmt(t.fallback, indent + "  ", out);
  }
  std::string dynamic_access(const NodeRef& n, const std::vector<AxisIndex>& idx, int axis,
                             const ScalarRef& row, const std::string& indent) {
    std::string out = node(n) + "[";
    for (std::size_t k = 0; k < idx.size(); ++k) {
      out += k ? ", " : "";
      out += static_cast<int>(k) == axis ? "?" + scalar(row, indent) : index(idx[k]);
    }
    return out + "]";
  }

  // ---- scalars ----
  std::string show(const Constant& c, const std::string&) {
    return format_ir_number(c.value) + dtype_suffix(c.dtype, DType::F32);
  }
  std::string show(const ConstantBits& c, const std::string&) {
    return "bits(" + std::to_string(c.bits) + ")" + dtype_suffix(c.dtype, DType::I64);
  }
  std::string show(const Get& g, const std::string&) { return access(g.node, g.index); }
  std::string show(const LocalScope& l, const std::string& indent) {
    std::string out = "{scope " + local(l.scope_id) + dtype_suffix(l.dtype, DType::F32) + ":\n";
    stmt(l.body, indent + "    ", out);
    return out + indent + "  }";
  }
  std::string show(const GetLocal& l, const std::string&) { return local(l.scope_id); }
  std::string show(const EmbedIndex& e, const std::string&) {
    return "index(" + index(e.index) + ")";
  }
  std::string show(const GetDynamic& g, const std::string& indent) {
    return dynamic_access(g.node, g.index, g.dyn_axis, g.dyn_value, indent);
  }
  std::string show(const Apply& a, const std::string& indent) {
    std::string out = std::string(op_name(a.op)) + dtype_suffix(a.dtype, DType::F32) + "(";
    for (std::size_t k = 0; k < a.args.size(); ++k)
      out += (k ? ", " : "") + scalar(a.args[k], indent);
    return out + ")";
  }
};

}  // namespace

std::string print_loop_ir(const LoweredRoutine& routine) {
  // The packings' nodes come after the body's, so the body prints as it would without them.
  std::vector<NodeRef> nodes = nodes_of(routine.body);
  for (const PackedOperand& p : routine.packed)
    for (const NodeRef& n : nodes_of(p.fill))
      if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
  LoopIrPrinter printer(nodes);
  std::string out = "# " + routine.name;
  if (!routine.statics.empty()) {
    out += " (statics:";
    for (std::size_t k = 0; k < routine.statics.size(); ++k) {
      printer.bind_static(routine.statics[k]);
      out += (k ? ", " : " ") + (routine.statics[k].name.empty()
                                     ? "s" + std::to_string(routine.statics[k].symbol.id)
                                     : routine.statics[k].name);
    }
    out += ")";
  }
  out += "\n";
  printer.stmt(routine.body, "", out);
  if (!routine.packed.empty()) out += "# packed before the first run and after each change of the source:\n";
  for (const PackedOperand& p : routine.packed) printer.stmt(p.fill, "", out);
  return out;
}

std::string print_stmt(const StmtRef& stmt) {
  LoopIrPrinter printer(nodes_of(stmt));
  std::string out;
  printer.stmt(stmt, "", out);
  return out;
}

std::string print_scalar(const ScalarRef& scalar) {
  LoopIrPrinter printer(nodes_of(scalar));
  return printer.scalar(scalar, "");
}

}  // namespace cannl::ir
