// Scalar expressions of the C-family printer (see body_printer.h for the value representation).
#include <cmath>
#include <limits>

#include "cannl/support/error.h"
#include "cannl/support/saturate.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/expr_text.h"

namespace cannl::codegen {

using ir::DType;
using ir::Op;

namespace {

bool is_narrow(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::FP8; }

std::string signed_literal(std::int64_t v, const char* suffix) {
  if (v == std::numeric_limits<std::int64_t>::min()) return "(-9223372036854775807LL - 1)";
  if (v < 0) return "(-" + std::to_string(-v) + suffix + ")";
  return std::to_string(v) + suffix;
}

// Literal of integer dtype `t` holding `v` (already in range of t).
std::string int_literal(std::int64_t v, DType t) {
  switch (t) {
    case DType::I32:
      return v == std::numeric_limits<std::int32_t>::min() ? "(-2147483647 - 1)" : signed_literal(v, "");
    case DType::I64: return signed_literal(v, "LL");
    case DType::U32: return std::to_string(static_cast<std::uint32_t>(v)) + "u";
    case DType::U64: return std::to_string(static_cast<std::uint64_t>(v)) + "ULL";
    case DType::U8: return "((uint8_t)" + std::to_string(static_cast<std::uint8_t>(v)) + ")";
    default: throw InternalError("int_literal: not an integer dtype");
  }
}

// Ops that overflow signed integers and so must be computed in the unsigned type.
bool wraps_signed(Op op) {
  return op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Neg || op == Op::Fma ||
         op == Op::Mul3;
}

std::string wrapping_signed_op(Op op, const std::string& type, const std::vector<std::string>& a) {
  const std::string u = type == "int32_t" ? "uint32_t" : "uint64_t";
  auto U = [&](std::size_t k) { return c_cast(u, a[k]); };
  std::string body;
  switch (op) {
    case Op::Add: body = U(0) + " + " + U(1); break;
    case Op::Sub: body = U(0) + " - " + U(1); break;
    case Op::Mul: body = U(0) + " * " + U(1); break;
    case Op::Neg: body = "(" + u + ")0 - " + U(0); break;
    case Op::Fma: body = U(0) + " * " + U(1) + " + " + U(2); break;
    default: body = U(0) + " * " + U(1) + " * " + U(2); break;  // Mul3
  }
  return c_cast(type, "(" + body + ")");
}

}  // namespace

Expr BodyPrinter::scalar(const ir::ScalarRef& s) {
  internal_check(s != nullptr, "codegen: null scalar");
  struct Visitor {
    BodyPrinter& p;
    Expr operator()(const ir::Constant& c) const { return p.constant(c); }
    Expr operator()(const ir::ConstantBits& c) const { return p.constant_bits(c); }
    Expr operator()(const ir::Get& g) const { return p.get(g); }
    Expr operator()(const ir::LocalScope& l) const { return p.local_scope(l); }
    Expr operator()(const ir::GetLocal& l) const { return {p.local_name(l.scope_id, l.dtype), l.dtype}; }
    Expr operator()(const ir::EmbedIndex& e) const {
      return {c_cast("int64_t", p.index(e.index, /*wide=*/true)), DType::I64};
    }
    Expr operator()(const ir::Apply& a) const { return p.apply(a); }
    Expr operator()(const ir::GetDynamic& g) const { return p.get_dynamic(g); }
  };
  return std::visit(Visitor{*this}, s->node);
}

// A constant denotes its value converted to its dtype (loop_ir.h: every scalar has a dtype).
Expr BodyPrinter::constant(const ir::Constant& c) const {
  const double v = c.value;
  switch (c.dtype) {
    case DType::F64: return {double_literal(v), DType::F64};
    case DType::F32: return {float_literal(static_cast<float>(v)), DType::F32};
    case DType::F16: case DType::BF16: case DType::FP8:
      return {convert({double_literal(v), DType::F64}, c.dtype), c.dtype};
    case DType::I32: return {int_literal(saturating_trunc<std::int32_t>(v), c.dtype), c.dtype};
    case DType::I64: return {int_literal(saturating_trunc<std::int64_t>(v), c.dtype), c.dtype};
    case DType::U32: return {int_literal(saturating_trunc<std::uint32_t>(v), c.dtype), c.dtype};
    case DType::U64:
      return {int_literal(static_cast<std::int64_t>(saturating_trunc<std::uint64_t>(v)), c.dtype), c.dtype};
    case DType::U8: return {int_literal(saturating_trunc<std::uint8_t>(v), c.dtype), c.dtype};
    case DType::U4x32: {
      const Expr as_i64{int_literal(saturating_trunc<std::int64_t>(v), DType::I64), DType::I64};
      return {convert(as_i64, DType::U4x32), DType::U4x32};
    }
  }
  throw InternalError("codegen: unknown dtype of a constant");
}

// ConstantBits is an int64 value converted to its dtype.
Expr BodyPrinter::constant_bits(const ir::ConstantBits& c) const {
  const Expr bits{int_literal(c.bits, DType::I64), DType::I64};
  return {convert(bits, c.dtype), c.dtype};
}

Expr BodyPrinter::get(const ir::Get& g) {
  const std::string element = names_.node(*g.node) + "[" + offset(*g.node, g.index) + "]";
  if (const auto it = read_as_.find(element); it != read_as_.end()) return {it->second, g.node->dtype};
  return {load(element, g.node->dtype), g.node->dtype};
}

// The row is computed ahead of the statement (like a hoisted scope); no row reads zero.
Expr BodyPrinter::get_dynamic(const ir::GetDynamic& g) {
  std::string row;
  const std::vector<ir::AxisIndex> at = dynamic_index(*g.node, g.index, g.dyn_axis, g.dyn_value, row);
  const std::string element = names_.node(*g.node) + "[" + offset(*g.node, at) + "]";
  const std::string text =
      "(" + row + " >= 0 ? " + load(element, g.node->dtype) + " : " + zero(g.node->dtype) + ")";
  return {text, g.node->dtype};
}

std::vector<ir::AxisIndex> BodyPrinter::dynamic_index(const ir::TensorNode& node,
                                                      const std::vector<ir::AxisIndex>& index,
                                                      int axis, const ir::ScalarRef& row,
                                                      std::string& row_name) {
  internal_check(axis >= 0 && static_cast<std::size_t>(axis) < node.dims.size(),
                 "codegen: dynamic axis outside the node's rank");
  const std::string value = convert(scalar(row), DType::F64);
  row_name = "r" + std::to_string(next_row_++);
  line("const " + index_type() + " " + row_name + " = cannl_dyn_row(" + value + ", " +
       std::to_string(node.dims[static_cast<std::size_t>(axis)]) + "LL);");
  // A fresh symbol stands for the row so offset() renders it like a loop index.
  const ir::Symbol s = ir::fresh_symbol();
  symbols_[s.id] = row_name;
  std::vector<ir::AxisIndex> at = index;
  at[static_cast<std::size_t>(axis)] = ir::AxisIndex::iterator(s);
  return at;
}

// Hoists the scope: declares its local and emits its body before the statement being printed.
Expr BodyPrinter::local_scope(const ir::LocalScope& l) {
  const std::string name = local_name(l.scope_id, l.dtype);
  if (!hoisted_.empty() && hoisted_.back().count(l.scope_id) != 0) return {name, l.dtype};
  if (!hoisted_.empty()) hoisted_.back().insert(l.scope_id);
  line(d_.value_type(l.dtype) + " " + name + " = " + zero(l.dtype) + ";");
  stmt(l.body);
  return {name, l.dtype};
}

Expr BodyPrinter::apply(const ir::Apply& a) {
  if (a.op == Op::Uniform1 || a.op == Op::ThreefryCrypto || a.op == Op::ThreefryLight) {
    return apply_random(a);
  }
  // Narrow floats compute in f32 and round the result back (lowering normally avoids this).
  const DType compute = is_narrow(a.dtype) ? DType::F32 : a.dtype;
  std::vector<std::string> args;
  for (std::size_t k = 0; k < a.args.size(); ++k) {
    const Expr e = scalar(a.args[k]);
    if (a.op == Op::Where && k == 0) {
      internal_check(e.dtype != DType::U4x32, "codegen: where's condition cannot be u4x32");
      args.push_back(e.text);  // tested in its own dtype
    } else {
      args.push_back(convert(e, compute));
    }
  }
  const std::string text = spelled_op(a, compute, args);
  return {is_narrow(a.dtype) ? convert({text, DType::F32}, a.dtype) : text, a.dtype};
}

std::string BodyPrinter::spelled_op(const ir::Apply& a, DType compute,
                                    const std::vector<std::string>& args) const {
  const std::string type = d_.value_type(compute);
  if (compute == DType::I32 || compute == DType::I64) {
    if (wraps_signed(a.op)) return wrapping_signed_op(a.op, type, args);
  }
  if (compute == DType::U4x32) {
    internal_check(a.op == Op::Identity || a.op == Op::Arg1 || a.op == Op::Arg2 || a.op == Op::Where,
                   [&] { return "codegen: op " + std::string(ir::op_name(a.op)) + " is not defined on u4x32"; });
  }
  // u4x32 takes the integer spellings: for its four ops they are plain selections (the float
  // select helpers take floats).
  if (const std::string own = d_.own_function(a.op, compute); !own.empty()) return own + "(" + args[0] + ")";
  const std::string_view spelling =
      ir::is_float(compute) ? ir::op_c_float_spelling(a.op) : ir::op_c_int_spelling(a.op);
  internal_check(!spelling.empty(), [&] {
    return "codegen: op " + std::string(ir::op_name(a.op)) + " has no C spelling for " +
           std::string(ir::dtype_name(compute));
  });
  const std::string suffix = ir::is_float(compute) ? d_.libm_suffix(compute) : "";
  std::string text = substitute_spelling(spelling, args, suffix, ir::dtype_name(compute));
  // Predicates yield C int; u8 arithmetic promotes to int: bring both back to the compute type.
  if (ir::op_is_predicate(a.op) || compute == DType::U8) text = c_cast(type, text);
  return text;
}

Expr BodyPrinter::apply_random(const ir::Apply& a) {
  if (a.op == Op::Uniform1) {
    internal_check(a.dtype != DType::U4x32, "codegen: uniform1 is undefined for u4x32 results");
    const std::string bits = convert(scalar(a.args[0]), DType::U4x32);
    if (a.dtype == DType::F64) return {"cannl_uniform1_f64(" + bits + ")", DType::F64};
    if (ir::is_float(a.dtype)) {
      const Expr f{"cannl_uniform1_f32(" + bits + ")", DType::F32};
      return {convert(f, a.dtype), a.dtype};
    }
    return {convert({bits, DType::U4x32}, a.dtype), a.dtype};  // ints: the low bits
  }
  const std::string key = convert(scalar(a.args[0]), DType::U4x32);
  const std::string counter = convert(scalar(a.args[1]), DType::U4x32);
  const char* fn = a.op == Op::ThreefryCrypto ? "cannl_threefry4x32_crypto(" : "cannl_threefry4x32_light(";
  const Expr r{fn + key + ", " + counter + ")", DType::U4x32};
  return {convert(r, a.dtype), a.dtype};
}

}  // namespace cannl::codegen
