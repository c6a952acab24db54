// Vectorized loops of the C dialect: explicit SIMD (GCC/Clang vector extensions) with a serial
// remainder, in the two shapes of ir::vector_form (the schedule's final lowering round left no
// other Vectorized loop):
//  * elementwise: vector loads, per-lane arithmetic that rounds exactly like the scalar C (+ - * /
//    neg, fma, relu, relu_gate and where as bit masks, max and min as maximumNumber / minimumNumber lane
//    masks, cannl's own exp and tanh) and vector stores: bitwise equal to the serial loop. The lane loops of an
//    interleaved Split_reduce have this shape (p[.., l] = p[.., l] + x[.., q*lanes + l]).
//  * accumulation: four independent vector accumulator chains, a fixed-order horizontal sum and
//    a serial remainder (the Vectorized annotation licenses the re-association).
#include <optional>

#include "cannl/support/error.h"
#include "codegen/c/c_dialect.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/expr_text.h"
#include "codegen/c/simd.h"

namespace cannl::codegen {

namespace {

constexpr int kChains = 4;


// The Sets of a loop body (a Set or a Seq of them: ir::vector_form checked it).
std::vector<const ir::Set*> flat_sets(const ir::StmtRef& body) {
  if (const auto* s = std::get_if<ir::Set>(&body->node)) return {s};
  std::vector<const ir::Set*> out;
  for (const auto& x : std::get<ir::Seq>(body->node).stmts) out.push_back(&std::get<ir::Set>(x->node));
  return out;
}

// Vector text of `s` with the loop symbol at the lane-0 position, or nullopt when `s` has no
// exact vector form.
struct VectorExpr {
  BodyPrinter& p;
  const SimdWidth& w;
  ir::Symbol loop;

  std::optional<std::string> operator()(const ir::ScalarRef& s) const {
    if (ir::scalar_dtype(*s) != ir::DType::F32) return std::nullopt;
    if (const auto* c = std::get_if<ir::Constant>(&s->node)) {
      return w.type + "_splat(" + float_literal(static_cast<float>(c->value)) + ")";
    }
    // The scalar value, as the serial loop computes it, in every lane.
    if (ir::loop_invariant(s, loop)) return w.type + "_splat(" + p.scalar(s).text + ")";
    if (const auto* g = std::get_if<ir::Get>(&s->node)) return get(*g, s);
    if (const auto* a = std::get_if<ir::Apply>(&s->node)) return apply(*a);
    return std::nullopt;
  }

  std::optional<std::string> get(const ir::Get& g, const ir::ScalarRef& s) const {
    if (g.node->dtype != ir::DType::F32) return std::nullopt;
    if (!ir::mentions(g.index, loop)) return w.type + "_splat(" + p.scalar(s).text + ")";
    if (!ir::contiguous_in(g.index, loop)) return std::nullopt;
    return "*(const " + w.type + "u *)&" + p.names().node(*g.node) + "[" + p.offset(*g.node, g.index) + "]";
  }

  // maximumNumber / minimumNumber lane by lane, as the prelude's cannl_fmaxf: a wins when it is
  // above b or b is NaN, else b when it is above a or a is NaN; equal lanes (±0) take the AND
  // (max: +0) or the OR (min: -0) of the bits. A GCC/Clang statement expression.
  std::string min_max(const std::string& a, const std::string& b, const std::string& mask, bool max) const {
    const std::string above = max ? " > " : " < ";
    return "({ const " + w.type + " cannl_a = " + a + ", cannl_b = " + b + "; const " + mask + " cannl_ia = (" + mask +
           ")cannl_a, cannl_ib = (" + mask + ")cannl_b; const " + mask + " cannl_ga = (cannl_a" + above +
           "cannl_b) | (cannl_b != cannl_b), cannl_gb = (cannl_b" + above + "cannl_a) | (cannl_a != cannl_a); (" + w.type +
           ")((cannl_ga & cannl_ia) | (~cannl_ga & ((cannl_gb & cannl_ib) | (~cannl_gb & (cannl_ia " + (max ? "&" : "|") +
           " cannl_ib))))); })";
  }

  std::string compare(const std::string& a, const std::string& op, const std::string& b, const std::string& mask) const {
    return "((" + w.type + ")((" + atom(a) + op + atom(b) + ") & (" + mask + ")" + w.type + "_splat(1.0f)))";
  }

  std::optional<std::string> apply(const ir::Apply& a) const {
    std::vector<std::string> v;
    for (const auto& x : a.args) {
      auto t = (*this)(x);
      if (!t) return std::nullopt;
      v.push_back(*t);
    }
    const std::string mask = "cannl_i32x" + std::to_string(w.lanes);
    const std::string zero = w.type + "_splat(0.0f)";
    auto bits = [&](const std::string& x) { return "((" + mask + ")" + atom(x) + ")"; };
    switch (a.op) {
      case ir::Op::Identity: case ir::Op::Arg1: return v[0];
      case ir::Op::Arg2: return v[1];
      // The sign bit flipped, as the scalar cannl_negf (prelude_minmax.cpp: GCC folds a minus of
      // an fma into fnmsub, which loses the -0 of a cancelling sum).
      case ir::Op::Neg: return "((" + w.type + ")(" + bits(v[0]) + " ^ (int32_t)(-2147483647 - 1)))";
      case ir::Op::Add: return "(" + v[0] + " + " + v[1] + ")";
      case ir::Op::Sub: return "(" + v[0] + " - " + v[1] + ")";
      case ir::Op::Mul: return "(" + v[0] + " * " + v[1] + ")";
      case ir::Op::Div: return "(" + v[0] + " / " + v[1] + ")";
      case ir::Op::Mul3: return "(" + v[0] + " * " + v[1] + " * " + v[2] + ")";
      case ir::Op::Fma: return w.type + "_fma(" + v[0] + ", " + v[1] + ", " + v[2] + ")";
      // x > 0 ? y : 0 as a lane mask: NaN and -0 compare false and give +0, like the scalar form.
      case ir::Op::Relu:
        return "((" + w.type + ")(" + bits(v[0]) + " & (" + atom(v[0]) + " > " + zero + ")))";
      case ir::Op::ReluGate:
        return "((" + w.type + ")(" + bits(v[1]) + " & (" + atom(v[0]) + " > " + zero + ")))";
      // cannl's own exp and tanh, lane by lane the scalar functions' operations (simd.cpp).
      case ir::Op::Exp: return w.type + "_exp(" + v[0] + ")";
      case ir::Op::Tanh: return w.type + "_tanh(" + v[0] + ")";
      // Mixed-precision roundings, lane by lane the prelude's (simd.cpp).
      case ir::Op::RoundBf16: return w.type + "_round_bf16(" + v[0] + ")";
      case ir::Op::RoundTf32: return w.type + "_round_tf32(" + v[0] + ")";
      case ir::Op::RoundF16: return w.type + "_round_f16(" + v[0] + ")";
      // c != 0 ? a : b with an f32 c (NaN selects a, ±0 selects b, as the scalar select).
      case ir::Op::Where: {
        const std::string taken = "(" + atom(v[0]) + " != " + zero + ")";
        return "((" + w.type + ")((" + taken + " & " + bits(v[1]) + ") | (~" + taken + " & " + bits(v[2]) + ")))";
      }
      // 1.0f where the comparison holds, else +0 (NaN compares unequal and not less, as scalar).
      case ir::Op::Cmplt: return compare(v[0], " < ", v[1], mask);
      case ir::Op::Cmpeq: return compare(v[0], " == ", v[1], mask);
      case ir::Op::Cmpne: return compare(v[0], " != ", v[1], mask);
      case ir::Op::Max: return min_max(v[0], v[1], mask, true);
      case ir::Op::Min: return min_max(v[0], v[1], mask, false);
      default: return std::nullopt;
    }
  }
};

// The vector text of `s`; InternalError when it has none (ir::vector_form promised one).
std::string vector_text(const VectorExpr& vexpr, const ir::ScalarRef& s) {
  auto t = vexpr(s);
  internal_check(t.has_value(), "codegen: a Vectorized loop without an exact vector form reached the C printer");
  return *t;
}

void print_accumulation(BodyPrinter& p, const ir::For& f, const std::string& name, const SimdWidth& w) {
  const ir::Set& s = *flat_sets(f.body)[0];
  const auto& add = std::get<ir::Apply>(s.value->node);
  const auto* first = std::get_if<ir::Get>(&add.args[0]->node);
  const bool self_first = first != nullptr && first->node->id == s.node->id && first->index == s.index;
  const ir::ScalarRef rest = add.args[self_first ? 1 : 0];
  // Vector text of rest at lane offset `k` vectors.
  const VectorExpr vexpr{p, w, f.index};
  std::vector<std::string> chain;
  for (int k = 0; k < kChains; ++k) {
    p.bind(f.index, "(" + name + " + " + std::to_string(k * w.lanes) + ")");
    chain.push_back(vector_text(vexpr, rest));
  }
  p.bind(f.index, name);
  const std::string lanes = std::to_string(w.lanes);
  const std::string target = p.names().node(*s.node) + "[" + p.offset(*s.node, s.index) + "]";
  p.line("{ /* vectorized accumulation, " + std::to_string(kChains) + " chains */");
  p.indent();
  std::string accs;
  for (int k = 0; k < kChains; ++k) accs += (k ? ", cannl_acc" : "cannl_acc") + std::to_string(k) + " = {0}";
  p.line(w.type + " " + accs + ";");
  p.line(p.index_type() + " " + name + " = " + std::to_string(f.begin) + ";");
  p.line("for (; " + name + " <= " + std::to_string(f.end - kChains * w.lanes) + "; " + name + " += " +
         std::to_string(kChains * w.lanes) + ") {");
  for (int k = 0; k < kChains; ++k) p.line("  cannl_acc" + std::to_string(k) + " += " + chain[static_cast<std::size_t>(k)] + ";");
  p.line("}");
  p.line("for (; " + name + " <= " + std::to_string(f.end - w.lanes) + "; " + name + " += " + lanes + ") cannl_acc0 += " + chain[0] + ";");
  p.line("float cannl_total = " + w.type + "_sum((cannl_acc0 + cannl_acc1) + (cannl_acc2 + cannl_acc3));");
  p.line("for (; " + name + " < " + std::to_string(f.end) + "; ++" + name + ") cannl_total += " +
         p.convert(p.scalar(rest), ir::DType::F32) + ";");
  p.line(target + " = " + target + " + cannl_total;");
  p.dedent();
  p.line("}");
}

void print_elementwise(BodyPrinter& p, const ir::For& f, const std::string& name, const SimdWidth& w) {
  const VectorExpr vexpr{p, w, f.index};
  std::vector<std::string> stores;
  for (const ir::Set* s : flat_sets(f.body))
    stores.push_back("*(" + w.type + "u *)&" + p.names().node(*s->node) + "[" + p.offset(*s->node, s->index) +
                     "] = " + vector_text(vexpr, s->value) + ";");
  p.line("{ /* vectorized, " + std::to_string(w.lanes) + " lanes */");
  p.indent();
  p.line(p.index_type() + " " + name + " = " + std::to_string(f.begin) + ";");
  p.line("for (; " + name + " <= " + std::to_string(f.end - w.lanes) + "; " + name + " += " + std::to_string(w.lanes) + ") {");
  for (const auto& st : stores) p.line("  " + st);
  p.line("}");
  p.line("for (; " + name + " < " + std::to_string(f.end) + "; ++" + name + ") {");
  p.indent();
  p.stmt(f.body);
  p.dedent();
  p.line("}");
  p.dedent();
  p.line("}");
}

}  // namespace

void CDialect::print_vectorized(BodyPrinter& p, const ir::For& f, const std::string& name) const {
  const ir::Target& target = p.options().target;
  const ir::VectorForm form = ir::vector_form(f, target);
  internal_check(form != ir::VectorForm::None, "codegen: a Vectorized loop without an exact vector form reached the C printer");
  SimdWidth w = simd_width(target.vector_bytes);
  w.type = vector_type(ir::DType::F32, w.lanes);
  if (form == ir::VectorForm::Accumulation) {
    print_accumulation(p, f, name, w);
  } else {
    print_elementwise(p, f, name, w);
  }
}

}  // namespace cannl::codegen
