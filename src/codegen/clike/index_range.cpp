// The int32 index precondition (index_range.h). Offsets are printed in Horner form over the
// node's padded dims, term by term left to right (conversions.cpp): a bound on every partial sum
// is the same Horner form over the terms' magnitudes, each loop symbol at its largest |value|.
#include "codegen/clike/index_range.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>

#include "cannl/ir/tree_mapper.h"
#include "cannl/support/error.h"

namespace cannl::codegen {

namespace {

constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr const char* kRemedy = "set the config key large_models=true (64-bit indices)";

constexpr std::int64_t kOver = kInt32Max + 1;  // "too large": the only distinction that matters

// |v|, saturated at kOver.
std::int64_t size_of(std::int64_t v) { return v < -kInt32Max || v > kInt32Max ? kOver : (v < 0 ? -v : v); }

// a * b + c for a, b, c in [0, kOver], saturated at kOver.
std::int64_t bounded(std::int64_t a, std::int64_t b, std::int64_t c) { return std::min(kOver, a * b + c); }

class IndexRangeCheck {
 public:
  explicit IndexRangeCheck(const ir::LoweredRoutine& r) : routine_(r) {}

  void run() {
    for (const auto& node : ir::nodes_of(routine_.body)) check_node(*node);
    // Loop symbols first (a loop may be visited after an access inside it), then accesses.
    ir::for_each_stmt(routine_.body, [&](const ir::Stmt& s) { bind_loops(s); });
    ir::for_each_stmt(routine_.body, [&](const ir::Stmt& s) { check_stmt(s); });
    ir::for_each_scalar(routine_.body, [&](const ir::Scalar& s) { check_scalar(s); });
  }

 private:
  const ir::LoweredRoutine& routine_;
  std::map<int, std::int64_t> largest_;  // loop symbol id -> largest |value|

  [[noreturn]] void fail(const std::string& what) const {
    throw IndexRangeError("routine '" + routine_.name + "': " + what + ", more than 32-bit indices address (" +
                          std::to_string(kInt32Max) + "); " + kRemedy);
  }

  void check_node(const ir::TensorNode& node) const {
    std::int64_t count = 1;
    for (const auto d : node.dims) count = bounded(count, size_of(d), 0);
    if (count > kInt32Max) {
      std::int64_t exact = 1;
      bool overflow = false;
      for (const auto d : node.dims) overflow = overflow || __builtin_mul_overflow(exact, d, &exact);
      fail("node " + node.debug_name() + " has " + (overflow ? "over 2^63" : std::to_string(exact)) +
           " elements (padding included)");
    }
  }

  void bind_symbol(ir::Symbol s, std::int64_t begin, std::int64_t end) {
    if (begin < -kInt32Max || end > kInt32Max)
      fail("a loop runs over [" + std::to_string(begin) + ", " + std::to_string(end) + ")");
    const std::int64_t m = std::max(size_of(begin), size_of(end - 1));
    auto [it, fresh] = largest_.try_emplace(s.id, m);
    if (!fresh) it->second = std::max(it->second, m);
  }

  void bind_loops(const ir::Stmt& s) {
    if (const auto* f = std::get_if<ir::For>(&s.node)) bind_symbol(f->index, f->begin, f->end);
    if (const auto* t = std::get_if<ir::TileMma>(&s.node))
      for (const ir::TileAxis* a : t->axes()) bind_symbol(a->symbol, a->begin, a->end);
  }

  // Largest |partial sum| of one axis index; statics (and unbound symbols, which the printer
  // rejects itself) contribute nothing: they are int64 and widen the sum from there on.
  std::int64_t magnitude(const ir::AxisIndex& at) const {
    std::int64_t m = size_of(at.offset);
    for (const auto& term : at.terms) {
      const auto it = largest_.find(term.symbol.id);
      if (it != largest_.end()) m = bounded(size_of(term.coeff), it->second, m);
    }
    return m;
  }

  void check_access(const ir::TensorNode& node, const std::vector<ir::AxisIndex>& index, int dyn_axis) const {
    std::int64_t m = 0;
    for (std::size_t k = 0; k < index.size() && k < node.dims.size(); ++k) {
      const std::int64_t axis = static_cast<int>(k) == dyn_axis ? size_of(node.dims[k] - 1) : magnitude(index[k]);
      m = bounded(m, k == 0 ? 0 : size_of(node.dims[k]), axis);
    }
    if (m > kInt32Max) fail("an offset into node " + node.debug_name() + " may exceed " + std::to_string(kInt32Max));
  }

  void check_stmt(const ir::Stmt& s) const {
    if (const auto* x = std::get_if<ir::Set>(&s.node)) check_access(*x->node, x->index, -1);
    if (const auto* x = std::get_if<ir::SetDynamic>(&s.node)) check_access(*x->node, x->index, x->dyn_axis);
    if (const auto* t = std::get_if<ir::TileMma>(&s.node))
      for (const ir::TileOperand* o : {&t->d, &t->a, &t->b}) check_access(*o->node, o->index, -1);
  }

  void check_scalar(const ir::Scalar& s) const {
    if (const auto* x = std::get_if<ir::Get>(&s.node)) check_access(*x->node, x->index, -1);
    if (const auto* x = std::get_if<ir::GetDynamic>(&s.node)) check_access(*x->node, x->index, x->dyn_axis);
  }
};

}  // namespace

void check_index_range(const ir::LoweredRoutine& routine, ir::DType index_dtype) {
  if (index_dtype != ir::DType::I32 || !routine.body) return;
  IndexRangeCheck(routine).run();
}

}  // namespace cannl::codegen
