// Statements of the C-family printer: loops, stores, locals, conditionals.
#include "cannl/ir/block_reduction.h"
#include "cannl/support/error.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/expr_text.h"

namespace cannl::codegen {

BodyPrinter::BodyPrinter(const CLikePrinter& dialect, const IdentifierTable& names,
                         const std::vector<ir::StaticSymbol>& statics,
                         const CodegenOptions& options)
    : d_(dialect), names_(names), options_(options) {
  for (const auto& s : statics) {
    const std::string* name = names.static_symbol(s.symbol);
    internal_check(name != nullptr, [&] { return "codegen: static symbol " + s.name + " has no identifier"; });
    symbols_[s.symbol.id] = *name;
  }
}

std::string BodyPrinter::print(const ir::StmtRef& body, int indent) {
  std::string text;
  out_ = &text;
  indent_ = indent;
  stmt(body);
  out_ = nullptr;
  return text;
}

void BodyPrinter::line(const std::string& text) {
  out_->append(static_cast<std::size_t>(indent_) * 2, ' ');
  out_->append(text);
  out_->push_back('\n');
}

namespace {

// Whether the last line printed before `end`, without its indentation, is `barrier`.
bool last_line_is(const std::string& out, std::size_t end, const std::string& barrier) {
  if (end == 0) return false;
  const std::size_t last = out.find_last_not_of(" \n", end - 1);
  if (last == std::string::npos) return false;
  const std::size_t newline = out.find_last_of('\n', last);
  const std::size_t first = out.find_first_not_of(' ', newline == std::string::npos ? 0 : newline + 1);
  return out.compare(first, last + 1 - first, barrier) == 0;
}

}  // namespace

void BodyPrinter::bracket_uniform_region(std::size_t start, std::size_t from) {
  const std::string b = d_.barrier();
  if (b.empty() || !d_.brackets_uniform_regions_with_barriers() || out_->find(b, from) == std::string::npos) return;
  if (!last_line_is(*out_, out_->size(), b)) line(b);
  if (last_line_is(*out_, start, b)) return;
  // Before the region's first line, at its indentation (positions before `start` stay valid).
  const std::size_t indentation = out_->find_first_not_of(' ', start) - start;
  out_->insert(start, std::string(indentation, ' ') + b + "\n");
}

// Local names are v0, v1, ... in first-use order, so the text never depends on the process-wide
// scope-id counter.
const std::string& BodyPrinter::local_name(int scope_id, ir::DType dtype) {
  auto it = locals_.find(scope_id);
  if (it == locals_.end()) {
    const std::string name = "v" + std::to_string(locals_.size());
    it = locals_.emplace(scope_id, std::make_pair(name, dtype)).first;
  }
  return it->second.first;
}

void BodyPrinter::with_hoisted_locals(const std::function<std::vector<std::string>()>& make,
                                      const std::function<void()>& after) {
  std::string pre;
  std::string* saved = out_;
  out_ = &pre;
  ++indent_;
  hoisted_.emplace_back();
  const std::vector<std::string> lines = make();
  hoisted_.pop_back();
  --indent_;
  out_ = saved;
  const bool block = !pre.empty();
  if (block) {
    line("{");
    out_->append(pre);
    ++indent_;
  }
  for (const auto& l : lines) line(l);
  if (after) after();
  if (block) {
    --indent_;
    line("}");
  }
}

void BodyPrinter::stmt(const ir::StmtRef& s) {
  internal_check(s != nullptr, "codegen: null statement");
  struct Visitor {
    BodyPrinter& p;
    void operator()(const ir::Seq& q) const {
      for (const auto& x : q.stmts) p.stmt(x);
    }
    void operator()(const ir::Comment& c) const {
      if (p.comments_) p.line("/* " + comment_safe(c.text) + " */");
    }
    void operator()(const ir::For& f) const { p.print_for(f); }
    void operator()(const ir::ZeroOut& z) const {
      const auto bytes = static_cast<std::size_t>(z.node->num_elements()) * ir::dtype_bytes(z.node->dtype);
      p.line(p.d_.zero_out(p.names_.node(*z.node), z.node->num_elements(), bytes));
    }
    void operator()(const ir::Set& s) const { p.print_set(s); }
    void operator()(const ir::SetLocal& s) const { p.print_set_local(s); }
    void operator()(const ir::DeclareLocal& d) const { p.print_declare_local(d); }
    void operator()(const ir::If& i) const { p.print_if(i); }
    void operator()(const ir::SetDynamic& s) const { p.print_set_dynamic(s); }
    void operator()(const ir::Barrier&) const {
      if (const std::string b = p.d_.barrier(); !b.empty()) p.line(b);
    }
    void operator()(const ir::TileMma& t) const { p.d_.print_tile(p, t); }
  };
  std::visit(Visitor{*this}, s->node);
}

void BodyPrinter::print_for(const ir::For& f) {
  const std::string name = fresh_loop_name();
  auto previous = symbols_.find(f.index.id);
  const bool shadowing = previous != symbols_.end();
  const std::string saved = shadowing ? previous->second : std::string();
  symbols_[f.index.id] = name;
  switch (f.axis) {
    case ir::AxisType::Grid: d_.print_grid(*this, f, name); break;
    case ir::AxisType::Workgroup: case ir::AxisType::WorkgroupReduce: d_.print_workgroup(*this, f, name); break;
    case ir::AxisType::Vectorized: d_.print_vectorized(*this, f, name); break;
    // Unrolling is the C compiler's: the loop is printed plainly.
    case ir::AxisType::Serial: case ir::AxisType::Unrolled:
      print_serial_loop(f, name, std::to_string(f.begin), std::to_string(f.end));
      break;
  }
  if (shadowing) {
    symbols_[f.index.id] = saved;
  } else {
    symbols_.erase(f.index.id);
  }
}

void BodyPrinter::print_serial_loop(const ir::For& f, const std::string& name,
                                    const std::string& begin, const std::string& end) {
  line("for (" + index_type() + " " + name + " = " + begin + "; " + name + " < " + end + "; ++" + name + ") {");
  ++indent_;
  stmt(f.body);
  --indent_;
  line("}");
}

void BodyPrinter::print_set(const ir::Set& s) {
  if (comments_ && !s.comment.empty()) line("/* " + comment_safe(s.comment) + " */");
  with_hoisted_locals([&] {
    const Expr value = scalar(s.value);
    const std::string target = names_.node(*s.node) + "[" + offset(*s.node, s.index) + "]";
    return std::vector<std::string>{target + " = " + store(value, s.node->dtype) + ";"};
  });
}

void BodyPrinter::print_set_local(const ir::SetLocal& s) {
  auto it = locals_.find(s.scope_id);
  internal_check(it != locals_.end(), [&] {
    return "codegen: SetLocal of scope " + std::to_string(s.scope_id) + " before its declaration";
  });
  const std::string name = it->second.first;
  const ir::DType dtype = it->second.second;
  with_hoisted_locals([&] {
    const Expr value = scalar(s.value);
    return std::vector<std::string>{name + " = " + convert(value, dtype) + ";"};
  });
}

void BodyPrinter::print_declare_local(const ir::DeclareLocal& d) {
  const std::string name = local_name(d.scope_id, d.dtype);
  // Always initialized: reading an uninitialized C local would be undefined behaviour.
  line(d_.value_type(d.dtype) + " " + name + " = " + zero(d.dtype) + ";");
}

void BodyPrinter::print_if(const ir::If& s) {
  const std::size_t start = mark();
  with_hoisted_locals(
      [&] {
        const Expr cond = scalar(s.condition);
        internal_check(cond.dtype != ir::DType::U4x32, "codegen: an If condition cannot be u4x32");
        return std::vector<std::string>{"if (" + atom(cond.text) + " != 0) {"};
      },
      [&] {
        // Every thread of a block takes an If that names only block and serial indices alike:
        // a block reduction under it stays cooperative.
        const int divergent = ir::same_in_every_thread(s.condition, thread_indices_) ? 0 : 1;
        ++indent_;
        divergence_ += divergent;
        const std::size_t from = mark();
        stmt(s.body);
        bracket_uniform_region(start, from);  // only a uniform If holds a barrier (schedule::lower_for_target)
        divergence_ -= divergent;
        --indent_;
        line("}");
      });
}

}  // namespace cannl::codegen

namespace cannl::codegen {

// if (r >= 0) node[.. r ..] = accum(node[.. r ..], value): a serial read-modify-write, so rows
// repeated across iterations accumulate in program order (deterministic, no atomics).
void BodyPrinter::print_set_dynamic(const ir::SetDynamic& s) {
  if (comments_ && !s.comment.empty()) line("/* " + comment_safe(s.comment) + " */");
  std::vector<ir::AxisIndex> at;
  with_hoisted_locals(
      [&] {
        std::string row;
        at = dynamic_index(*s.node, s.index, s.dyn_axis, s.dyn_value, row);
        return std::vector<std::string>{"if (" + row + " >= 0) {"};
      },
      [&] {
        ++indent_;
        const ir::DType compute = ir::compute_dtype(s.node->dtype);
        const auto value = ir::apply(s.accum, compute, {ir::get(s.node, at), s.value});
        stmt(ir::set(s.node, at, value));
        --indent_;
        line("}");
      });
}

}  // namespace cannl::codegen
