// Vectorized loops as explicit SIMD (GCC/Clang vector extensions) with a serial remainder.
//
// Two shapes are rendered, everything else declines to the plain loop (which the C compiler may
// still auto-vectorize):
//  * elementwise: every statement is `d[.., s] = f(...)` with `s` the loop index, contiguous
//    (coefficient 1 in the last axis only); operands are contiguous vectors or loop-invariant
//    splats; f uses ops whose vector form rounds exactly like the scalar C (+ - * / neg, fma,
//    relu and relu_gate as bit masks, max and min as maximumNumber / minimumNumber lane masks):
//    bitwise equal to the serial loop. The lane loops of an interleaved Split_reduce have this
//    shape (p[.., l] = p[.., l] + x[.., q*lanes + l]), so they become vector loads and adds.
//  * accumulation: one statement `d[..] = d[..] + f(...)` with `d` not indexed by `s`: four
//    independent vector accumulator chains, a fixed-order horizontal sum and a serial remainder
//    (the Vectorized annotation licenses the re-association).
#include <optional>

#include "cannl/support/error.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/expr_text.h"
#include "codegen/c/simd.h"

namespace cannl::codegen {

namespace {

constexpr int kChains = 4;

// Contiguous in `s`: the last axis is `s + (terms without s)`, and no other axis mentions `s`.
bool contiguous(const std::vector<ir::AxisIndex>& index, ir::Symbol s) {
  if (index.empty()) return false;
  for (std::size_t ax = 0; ax + 1 < index.size(); ++ax) {
    if (index[ax].mentions(s)) return false;
  }
  int count = 0;
  for (const auto& term : index.back().terms) {
    if (term.symbol == s) count += term.coeff == 1 ? 1 : 2;
  }
  return count == 1;
}

// Statements of a loop body that is a flat sequence of Sets; empty when it is anything else.
std::vector<const ir::Set*> flat_sets(const ir::StmtRef& body) {
  std::vector<const ir::Set*> out;
  if (const auto* s = std::get_if<ir::Set>(&body->node)) return {s};
  const auto* q = std::get_if<ir::Seq>(&body->node);
  if (q == nullptr) return {};
  for (const auto& x : q->stmts) {
    const auto* s = std::get_if<ir::Set>(&x->node);
    if (s == nullptr) return {};
    out.push_back(s);
  }
  return out;
}

// Reads of `node` in `s` other than at `index` (a loop-carried dependence the vector form breaks).
bool reads_elsewhere(const ir::ScalarRef& s, const ir::TensorNode& node, const std::vector<ir::AxisIndex>& index) {
  if (const auto* g = std::get_if<ir::Get>(&s->node)) return g->node->id == node.id && g->index != index;
  if (const auto* a = std::get_if<ir::Apply>(&s->node)) {
    for (const auto& x : a->args) {
      if (reads_elsewhere(x, node, index)) return true;
    }
    return false;
  }
  return !std::holds_alternative<ir::Constant>(s->node);
}

bool reads(const ir::ScalarRef& s, const ir::TensorNode& node) {
  if (const auto* g = std::get_if<ir::Get>(&s->node)) return g->node->id == node.id;
  if (const auto* a = std::get_if<ir::Apply>(&s->node)) {
    for (const auto& x : a->args) {
      if (reads(x, node)) return true;
    }
    return false;
  }
  return !std::holds_alternative<ir::Constant>(s->node);
}

}  // namespace

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
    if (const auto* g = std::get_if<ir::Get>(&s->node)) return get(*g, s);
    if (const auto* a = std::get_if<ir::Apply>(&s->node)) return apply(*a);
    return std::nullopt;
  }

  std::optional<std::string> get(const ir::Get& g, const ir::ScalarRef& s) const {
    if (g.node->dtype != ir::DType::F32) return std::nullopt;
    if (!ir::mentions(g.index, loop)) return w.type + "_splat(" + p.scalar(s).text + ")";
    if (!contiguous(g.index, loop)) return std::nullopt;
    return "*(const " + w.type + "u *)&" + p.names_.node(*g.node) + "[" + p.offset(*g.node, g.index) + "]";
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
      case ir::Op::Neg: return "(-" + atom(v[0]) + ")";
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
      case ir::Op::Max: return min_max(v[0], v[1], mask, true);
      case ir::Op::Min: return min_max(v[0], v[1], mask, false);
      default: return std::nullopt;
    }
  }
};

bool BodyPrinter::print_vectorized(const ir::For& f, const std::string& name) {
  if (options_.vector_bytes <= 0) return false;
  const SimdWidth w = simd_width(options_.vector_bytes);
  const std::vector<const ir::Set*> sets = flat_sets(f.body);
  if (sets.empty() || f.end - f.begin < w.lanes) return false;
  const VectorExpr vexpr{*this, w, f.index};

  // Accumulation: d[..] = d[..] + rest, d not moving with the loop.
  if (sets.size() == 1 && !ir::mentions(sets[0]->index, f.index)) {
    const ir::Set& s = *sets[0];
    const auto* add = std::get_if<ir::Apply>(&s.value->node);
    if (s.node->dtype != ir::DType::F32 || add == nullptr || add->op != ir::Op::Add || add->dtype != ir::DType::F32) {
      return false;
    }
    const ir::ScalarRef self = ir::get(s.node, s.index);
    auto same = [&](const ir::ScalarRef& x) {
      const auto* g = std::get_if<ir::Get>(&x->node);
      return g != nullptr && g->node->id == s.node->id && g->index == s.index;
    };
    const int rest_at = same(add->args[0]) ? 1 : same(add->args[1]) ? 0 : -1;
    if (rest_at < 0) return false;
    const ir::ScalarRef rest = add->args[static_cast<std::size_t>(rest_at)];
    if (reads(rest, *s.node)) return false;  // serially it would see the running sum
    // Vector text of rest at lane offset `k` vectors.
    std::vector<std::string> chain;
    for (int k = 0; k < kChains; ++k) {
      symbols_[f.index.id] = "(" + name + " + " + std::to_string(k * w.lanes) + ")";
      auto t = vexpr(rest);
      if (!t) {
        symbols_[f.index.id] = name;
        return false;
      }
      chain.push_back(*t);
    }
    symbols_[f.index.id] = name;
    const std::string lanes = std::to_string(w.lanes);
    const std::string target = names_.node(*s.node) + "[" + offset(*s.node, s.index) + "]";
    line("{ /* vectorized accumulation, " + std::to_string(kChains) + " chains */");
    ++indent_;
    std::string accs;
    for (int k = 0; k < kChains; ++k) accs += (k ? ", cannl_acc" : "cannl_acc") + std::to_string(k) + " = {0}";
    line(w.type + " " + accs + ";");
    line("int64_t " + name + " = " + std::to_string(f.begin) + ";");
    line("for (; " + name + " <= " + std::to_string(f.end - kChains * w.lanes) + "; " + name + " += " +
         std::to_string(kChains * w.lanes) + ") {");
    for (int k = 0; k < kChains; ++k) line("  cannl_acc" + std::to_string(k) + " += " + chain[static_cast<std::size_t>(k)] + ";");
    line("}");
    line("for (; " + name + " <= " + std::to_string(f.end - w.lanes) + "; " + name + " += " + lanes + ") cannl_acc0 += " + chain[0] + ";");
    line("float cannl_total = " + w.type + "_sum((cannl_acc0 + cannl_acc1) + (cannl_acc2 + cannl_acc3));");
    line("for (; " + name + " < " + std::to_string(f.end) + "; ++" + name + ") cannl_total += " +
         convert(scalar(rest), ir::DType::F32) + ";");
    line(target + " = " + target + " + cannl_total;");
    --indent_;
    line("}");
    return true;
  }

  // Elementwise.
  std::vector<std::string> stores;
  for (const ir::Set* s : sets) {
    if (s->node->dtype != ir::DType::F32 || !contiguous(s->index, f.index)) return false;
    for (const ir::Set* other : sets) {
      if (reads_elsewhere(other->value, *s->node, s->index)) return false;
    }
    auto t = vexpr(s->value);
    if (!t) return false;
    stores.push_back("*(" + w.type + "u *)&" + names_.node(*s->node) + "[" + offset(*s->node, s->index) +
                     "] = " + *t + ";");
  }
  line("{ /* vectorized, " + std::to_string(w.lanes) + " lanes */");
  ++indent_;
  line("int64_t " + name + " = " + std::to_string(f.begin) + ";");
  line("for (; " + name + " <= " + std::to_string(f.end - w.lanes) + "; " + name + " += " + std::to_string(w.lanes) + ") {");
  for (const auto& st : stores) line("  " + st);
  line("}");
  line("for (; " + name + " < " + std::to_string(f.end) + "; ++" + name + ") {");
  ++indent_;
  stmt(f.body);
  --indent_;
  line("}");
  --indent_;
  line("}");
  return true;
}

}  // namespace cannl::codegen
