// The tree-walking interpreter of the loop IR. Deliberately naive: every access is bounds-checked
// and every scalar step goes through scalar_semantics.h, so it can serve as the oracle.
#include "cannl/interp/interpreter.h"

#include <array>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "cannl/interp/scalar_semantics.h"
#include "cannl/interp/storage.h"
#include "cannl/support/error.h"

namespace cannl::interp {

using ir::DType;

namespace {

std::string join(const std::vector<std::int64_t>& xs) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < xs.size(); ++i) out << (i ? ", " : "") << xs[i];
  out << ']';
  return out.str();
}

std::string node_text(const ir::TensorNode& node) {
  return node.debug_name() + " (n" + std::to_string(node.id) + ", " +
         std::string(ir::dtype_name(node.dtype)) + ", dims " + join(node.dims) + ")";
}

// The state of one run: symbol values, locals by scope id, and the buffers.
class Machine {
 public:
  Machine(const Buffers& buffers, Observer* observer) : buffers_(buffers), observer_(observer) {}

  void bind(ir::Symbol s, std::int64_t value) { symbols_.push_back({s.id, value}); }
  void exec(const ir::StmtRef& stmt) {
    internal_check(stmt != nullptr, "interp: null statement");
    std::visit([this](const auto& form) { exec_form(form); }, stmt->node);
  }
  Value eval(const ir::ScalarRef& scalar) {
    internal_check(scalar != nullptr, "interp: null scalar");
    return std::visit([this](const auto& form) { return eval_form(form); }, scalar->node);
  }

 private:
  struct Local {
    DType dtype;
    Value value;
  };

  void exec_form(const ir::Seq& s) {
    for (const auto& stmt : s.stmts) exec(stmt);
  }
  void exec_form(const ir::Comment&) {}
  void exec_form(const ir::For& f);
  void exec_form(const ir::ZeroOut& z);
  void exec_form(const ir::Set& s);
  void exec_form(const ir::SetLocal& s);
  void exec_form(const ir::DeclareLocal& d) {
    if (observer_) observer_->local(d.scope_id, Observer::LocalEvent::Declared);
    locals_[d.scope_id] = {d.dtype, zero_value(d.dtype)};
  }
  void exec_form(const ir::If& i) {
    if (is_nonzero(eval(i.condition))) exec(i.body);
  }
  void exec_form(const ir::SetDynamic& s);
  // One thread of control: a barrier has nothing to wait for.
  void exec_form(const ir::Barrier&) {
    if (observer_) observer_->barrier();
  }
  // A TileMma means its fallback (loop_ir.h), after zeroing d when it starts at zero.
  void exec_form(const ir::TileMma& t) {
    if (t.zero_start) exec_form(ir::ZeroOut{t.d.node});
    exec(t.fallback);
  }

  Value eval_form(const ir::Constant& c) { return constant_value(c.value, c.dtype); }
  Value eval_form(const ir::ConstantBits& c) { return constant_bits_value(c.bits, c.dtype); }
  Value eval_form(const ir::Get& g) {
    return load(*g.node, element_of(*g.node, g.index));
  }
  Value eval_form(const ir::LocalScope& l);
  Value eval_form(const ir::GetLocal& g);
  Value eval_form(const ir::EmbedIndex& e) { return Value::of(index_value(e.index)); }
  Value eval_form(const ir::GetDynamic& g);
  // The arguments live on the stack (no op takes more than kMaxArgs): an Apply is most of what
  // the interpreter evaluates.
  Value eval_form(const ir::Apply& a) {
    constexpr std::size_t kMaxArgs = 4;
    internal_check(a.args.size() <= kMaxArgs, "interp: an op with more than 4 arguments");
    std::array<Value, kMaxArgs> args;
    for (std::size_t k = 0; k < a.args.size(); ++k) args[k] = eval(a.args[k]);
    return apply_op(a.op, a.dtype, std::span<const Value>(args.data(), a.args.size()));
  }

  std::int64_t dynamic_row(const ir::TensorNode& node, int axis, const ir::ScalarRef& row);
  std::int64_t symbol_value(ir::Symbol s) const;
  std::int64_t index_value(const ir::AxisIndex& index) const;
  std::int64_t element_of(const ir::TensorNode& node,
                          const std::vector<ir::AxisIndex>& index) const;
  std::span<std::byte> buffer_of(const ir::TensorNode& node) const;
  Value load(const ir::TensorNode& node, std::int64_t element) {
    if (observer_) observer_->access(node, element, false);
    return load_element(node.dtype, buffer_of(node), element);
  }
  void store(const ir::TensorNode& node, std::int64_t element, const Value& value) {
    if (observer_) observer_->access(node, element, true);
    store_element(node.dtype, buffer_of(node), element, value);
  }

  const Buffers& buffers_;
  Observer* observer_;
  // The bound symbols, statics first, then the loops around the statement in nesting order: a
  // stack, searched from its top (the innermost loops are read most), a loop's binding shadowing
  // an outer one of the same symbol.
  std::vector<std::pair<int, std::int64_t>> symbols_;
  // Buffers found and checked for size, by node id modulo the cache's size: most accesses go
  // to the few nodes of the current statement.
  struct CachedBuffer {
    int id = -1;
    std::span<std::byte> bytes;
  };
  mutable std::array<CachedBuffer, 16> buffer_cache_;
  std::unordered_map<int, Local> locals_;
};

void Machine::exec_form(const ir::For& f) {
  const std::size_t slot = symbols_.size();
  symbols_.push_back({f.index.id, f.begin});
  for (std::int64_t i = f.begin; i < f.end; ++i) {
    symbols_[slot].second = i;
    if (observer_) observer_->iteration(f, i);
    exec(f.body);
  }
  if (observer_) observer_->loop_done(f);
  symbols_.pop_back();
}

void Machine::exec_form(const ir::ZeroOut& z) {
  std::span<std::byte> buffer = buffer_of(*z.node);
  if (observer_)
    for (std::int64_t e = 0; e < z.node->num_elements(); ++e) observer_->access(*z.node, e, true);
  std::memset(buffer.data(), 0, z.node->size_in_bytes());
}

void Machine::exec_form(const ir::Set& s) {
  const Value value = convert(eval(s.value), s.node->dtype);
  store(*s.node, element_of(*s.node, s.index), value);
}

// The row of a dynamic access, or -1 when the value selects no row (ir::dynamic_row).
std::int64_t Machine::dynamic_row(const ir::TensorNode& node, int axis, const ir::ScalarRef& row) {
  internal_check(axis >= 0 && static_cast<std::size_t>(axis) < node.dims.size(),
                 [&] { return "interp: dynamic axis outside the rank of " + node_text(node); });
  const Value v = convert(eval(row), DType::F64);
  return ir::dynamic_row(v.get<double>(), node.dims[static_cast<std::size_t>(axis)]);
}

Value Machine::eval_form(const ir::GetDynamic& g) {
  const std::int64_t r = dynamic_row(*g.node, g.dyn_axis, g.dyn_value);
  if (r < 0) return zero_value(g.node->dtype);
  return load(*g.node, element_of(*g.node, ir::with_dynamic_row(g.index, g.dyn_axis, r)));
}

// Row first, then value, then the read-modify-write (the order the generated C uses).
void Machine::exec_form(const ir::SetDynamic& s) {
  const std::int64_t r = dynamic_row(*s.node, s.dyn_axis, s.dyn_value);
  if (r < 0) return;
  const std::int64_t element = element_of(*s.node, ir::with_dynamic_row(s.index, s.dyn_axis, r));
  const Value old = load(*s.node, element);
  const Value args[] = {old, eval(s.value)};
  const Value result = convert(apply_op(s.accum, ir::compute_dtype(s.node->dtype), args),
                               s.node->dtype);
  store(*s.node, element, result);
}

void Machine::exec_form(const ir::SetLocal& s) {
  auto it = locals_.find(s.scope_id);
  internal_check(it != locals_.end(),
                 [&] { return "interp: SetLocal of undeclared local v" + std::to_string(s.scope_id); });
  const DType dtype = it->second.dtype;
  // Evaluate before storing: the value may read the local itself (accumulation).
  Value value = convert(eval(s.value), dtype);
  if (observer_) observer_->local(s.scope_id, Observer::LocalEvent::Set);
  locals_[s.scope_id] = {dtype, std::move(value)};
}

// A local scope starts from zero (as the generated `T v = 0;`), runs its body, yields the local.
// The local stays defined afterwards: later parts of the same statement may read it (CSE), as
// the generated C's hoisted declaration stays in scope for the statement.
Value Machine::eval_form(const ir::LocalScope& l) {
  if (observer_) observer_->local(l.scope_id, Observer::LocalEvent::ScopeOpened);
  locals_[l.scope_id] = {l.dtype, zero_value(l.dtype)};
  exec(l.body);
  if (observer_) observer_->local(l.scope_id, Observer::LocalEvent::ScopeClosed);
  return locals_.at(l.scope_id).value;
}

Value Machine::eval_form(const ir::GetLocal& g) {
  auto it = locals_.find(g.scope_id);
  internal_check(it != locals_.end(),
                 [&] { return "interp: GetLocal of undeclared local v" + std::to_string(g.scope_id); });
  if (observer_) observer_->local(g.scope_id, Observer::LocalEvent::Read);
  return convert(it->second.value, g.dtype);
}

std::int64_t Machine::symbol_value(ir::Symbol s) const {
  for (auto it = symbols_.rbegin(); it != symbols_.rend(); ++it)
    if (it->first == s.id) return it->second;
  throw InternalError("interp: symbol s" + std::to_string(s.id) + " is not bound by a loop or static");
}

// Affine index arithmetic wraps like the generated C's 64-bit index math would (never UB here).
std::int64_t Machine::index_value(const ir::AxisIndex& index) const {
  auto sum = static_cast<std::uint64_t>(index.offset);
  for (const ir::AffineTerm& term : index.terms)
    sum += static_cast<std::uint64_t>(term.coeff) *
           static_cast<std::uint64_t>(symbol_value(term.symbol));
  return static_cast<std::int64_t>(sum);
}

// The messages below are built only when a check fails: this runs for every element read or
// written, and composing them each time was most of the interpreter's work.
std::int64_t Machine::element_of(const ir::TensorNode& node,
                                 const std::vector<ir::AxisIndex>& index) const {
  internal_check(index.size() == node.dims.size(), [&] {
    return "interp: access to " + node_text(node) + " with " + std::to_string(index.size()) + " indices";
  });
  std::int64_t element = 0;
  for (std::size_t axis = 0; axis < index.size(); ++axis) {
    const std::int64_t at = index_value(index[axis]);
    internal_check(at >= 0 && at < node.dims[axis], [&] {
      std::vector<std::int64_t> all;
      for (const ir::AxisIndex& i : index) all.push_back(index_value(i));
      return "interp: out-of-bounds access to " + node_text(node) + " at index " + join(all) + " (axis " +
             std::to_string(axis) + ": " + index[axis].to_string() + ")";
    });
    element = element * node.dims[axis] + at;
  }
  return element;
}

std::span<std::byte> Machine::buffer_of(const ir::TensorNode& node) const {
  CachedBuffer& cached = buffer_cache_[static_cast<std::size_t>(node.id) % buffer_cache_.size()];
  if (cached.id == node.id) return cached.bytes;
  auto it = buffers_.find(node.id);
  internal_check(it != buffers_.end(), [&] { return "interp: no buffer for " + node_text(node); });
  internal_check(it->second.size() >= node.size_in_bytes(), [&] {
    return "interp: buffer of " + node_text(node) + " has " + std::to_string(it->second.size()) + " bytes, needs " +
           std::to_string(node.size_in_bytes());
  });
  cached = {node.id, it->second};
  return it->second;
}

}  // namespace

void run(const ir::LoweredRoutine& routine, const Buffers& buffers,
         std::span<const std::int64_t> static_values, Observer* observer) {
  internal_check(static_values.size() == routine.statics.size(), [&] {
    return "interp: routine " + routine.name + " has " + std::to_string(routine.statics.size()) + " statics, got " +
           std::to_string(static_values.size()) + " values";
  });
  Machine machine(buffers, observer);
  for (std::size_t k = 0; k < static_values.size(); ++k)
    machine.bind(routine.statics[k].symbol, static_values[k]);
  if (routine.body) machine.exec(routine.body);
}

}  // namespace cannl::interp
