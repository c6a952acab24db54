// Random program generator (see program_generator.h). Every program is a valid Assignments-IR
// computation over a few named axes with sizes 1..4, and every node is fully written before it
// is read (recurrent nodes have their own tests). Input values are quarter-integers in [-2, 2],
// so sums and short products are exact in f32 and any divergence is a real miscompile.
#include "opt/program_generator.h"

#include <algorithm>
#include <random>
#include <map>
#include <set>

namespace cannl::opt::testing {

namespace {

using ir::AxisIndex;
using ir::NodeRef;
using ir::Op;

struct Tensor {
  NodeRef node;
  std::vector<int> axes;  // an axis label per dimension
};

struct Read {
  Tensor tensor;
  std::vector<std::int64_t> fixed;  // per axis: -1 = iterate, else a fixed index
};

class Generator {
 public:
  Generator(std::uint64_t seed, std::string prefix) : rng_(seed), prefix_(std::move(prefix)) {}

  GeneratedProgram run() {
    const int n_axes = pick(2, 4);
    for (int a = 0; a < n_axes; ++a) sizes_.push_back(pick(1, 4));
    for (int k = pick(1, 3); k > 0; --k) add_input(random_axes(3), -2, 2);
    const bool one_hot = chance(0.25);
    if (one_hot) add_one_hot_sources();
    for (int k = pick(2, 7); k > 0; --k) step(one_hot);
    mark_outputs();
    return std::move(program_);
  }

 private:
  std::mt19937_64 rng_;
  std::string prefix_;
  std::vector<std::int64_t> sizes_;
  std::vector<Tensor> values_;    // readable tensors, inputs first
  std::vector<Tensor> computed_;  // tensors this program writes
  GeneratedProgram program_;
  int counter_ = 0;
  Tensor ids_, range_, table_;    // the one-hot pattern's sources

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T> const T& any(const std::vector<T>& xs) {
    return xs[static_cast<std::size_t>(pick(0, static_cast<int>(xs.size()) - 1))];
  }
  std::int64_t size(int axis) const { return sizes_[static_cast<std::size_t>(axis)]; }

  std::vector<int> random_axes(int max_rank) {
    std::vector<int> all(sizes_.size());
    for (std::size_t k = 0; k < all.size(); ++k) all[k] = static_cast<int>(k);
    std::shuffle(all.begin(), all.end(), rng_);
    all.resize(static_cast<std::size_t>(pick(0, std::min(max_rank, static_cast<int>(all.size())))));
    return all;
  }
  Tensor make(const std::string& what, const std::vector<int>& axes) {
    std::vector<std::int64_t> dims;
    for (int a : axes) dims.push_back(size(a));
    return {ir::make_node(prefix_ + what + std::to_string(counter_++), ir::DType::F32, dims), axes};
  }

  void add_input(const std::vector<int>& axes, int lo, int hi) {
    Tensor t = make("in", axes);
    ir::update_memory_mode(*t.node, ir::MemoryMode::Materialized, 900);
    std::vector<double> v(static_cast<std::size_t>(t.node->num_elements()));
    for (auto& x : v) x = pick(lo * 4, hi * 4) / 4.0;
    program_.inputs.push_back(t.node);
    program_.input_values.push_back(std::move(v));
    values_.push_back(t);
  }

  // ids[i] in [-1, V] (out-of-range ids select no row), range[v] = v, table[v, d].
  void add_one_hot_sources() {
    const int i = 0, v = static_cast<int>(sizes_.size());
    sizes_.push_back(pick(2, 5));
    add_input({i}, -1, 1);
    ids_ = values_.back();
    values_.pop_back();
    auto& ids = program_.input_values.back();
    for (auto& x : ids) x = pick(-1, static_cast<int>(size(v)));
    range_ = make("range", {v});
    program_.comp.body.push_back(ir::make_fetch(range_.node, ir::FetchRangeOverOffsets{}));
    add_input({v, 1 % static_cast<int>(sizes_.size() - 1)}, -2, 2);
    table_ = values_.back();
  }

  Read read_of(const Tensor& t, bool allow_fixed) {
    Read r{t, std::vector<std::int64_t>(t.axes.size(), -1)};
    for (std::size_t k = 0; k < t.axes.size(); ++k)
      if (allow_fixed && chance(0.15)) r.fixed[k] = pick(0, static_cast<int>(size(t.axes[k])) - 1);
    return r;
  }

  ir::Projections project(const Tensor& lhs, const std::vector<std::int64_t>& lhs_fixed,
                          const std::vector<Read>& reads) {
    std::vector<int> labels;
    auto use = [&labels](int a) {
      if (std::find(labels.begin(), labels.end(), a) == labels.end()) labels.push_back(a);
    };
    for (std::size_t k = 0; k < lhs.axes.size(); ++k)
      if (lhs_fixed[k] < 0) use(lhs.axes[k]);
    for (const auto& r : reads)
      for (std::size_t k = 0; k < r.tensor.axes.size(); ++k)
        if (r.fixed[k] < 0) use(r.tensor.axes[k]);
    ir::Projections p;
    std::map<int, ir::Symbol> sym;
    for (int a : labels) {
      p.product_space.push_back(size(a));
      p.product_iterators.push_back(sym[a] = ir::fresh_symbol());
    }
    auto index = [&](const Tensor& t, const std::vector<std::int64_t>& fixed) {
      std::vector<AxisIndex> idx;
      for (std::size_t k = 0; k < t.axes.size(); ++k)
        idx.push_back(fixed[k] >= 0 ? AxisIndex::fixed(fixed[k]) : AxisIndex::iterator(sym[t.axes[k]]));
      return idx;
    };
    p.lhs_dims = lhs.node->dims;
    p.project_lhs = index(lhs, lhs_fixed);
    for (const auto& r : reads) {
      p.rhs_dims.push_back(r.tensor.node->dims);
      p.project_rhs.push_back(index(r.tensor, r.fixed));
    }
    p.debug = "generated";
    return p;
  }

  void emit(const Tensor& lhs, const std::vector<std::int64_t>& lhs_fixed, Op accum, bool init,
            Op op, const std::vector<Read>& reads) {
    ir::AccumOp a;
    a.lhs = lhs.node;
    a.accum = accum;
    a.initialize_neutral = init;
    a.op = op;
    for (const auto& r : reads) a.args.push_back(ir::Operand::of(r.tensor.node));
    a.projections = project(lhs, lhs_fixed, reads);
    program_.comp.body.push_back(ir::make_accum(std::move(a)));
  }

  std::vector<Read> operands(int arity) {
    std::vector<Read> reads;
    for (int k = 0; k < arity; ++k) reads.push_back(read_of(any(values_), true));
    return reads;
  }
  static std::vector<int> axes_of(const std::vector<Read>& reads) {
    std::vector<int> out;
    for (const auto& r : reads)
      for (std::size_t k = 0; k < r.tensor.axes.size(); ++k)
        if (r.fixed[k] < 0 && std::find(out.begin(), out.end(), r.tensor.axes[k]) == out.end())
          out.push_back(r.tensor.axes[k]);
    return out;
  }

  Op binop() { return std::vector<Op>{Op::Add, Op::Sub, Op::Mul, Op::Max, Op::Min}[static_cast<std::size_t>(pick(0, 4))]; }
  Op unop() { return std::vector<Op>{Op::Relu, Op::Neg, Op::Identity}[static_cast<std::size_t>(pick(0, 2))]; }

  /// A new node: a broadcast binop or unop, reduced (add or max) over a random subset of axes.
  void new_node() {
    const int arity = chance(0.7) ? 2 : 1;
    const auto reads = operands(arity);
    std::vector<int> axes = axes_of(reads);
    std::shuffle(axes.begin(), axes.end(), rng_);
    const bool reduce = !axes.empty() && chance(0.4);
    if (reduce) axes.resize(static_cast<std::size_t>(pick(0, static_cast<int>(axes.size()) - 1)));
    if (chance(0.2)) {
      const auto extra = random_axes(1);  // broadcast over an axis no operand has
      for (int a : extra)
        if (std::find(axes.begin(), axes.end(), a) == axes.end()) axes.push_back(a);
    }
    Tensor lhs = make("t", axes);
    const Op accum = reduce ? (chance(0.5) ? Op::Add : Op::Max) : Op::Arg2;
    emit(lhs, std::vector<std::int64_t>(axes.size(), -1), accum, true,
         arity == 2 ? binop() : unop(), reads);
    values_.push_back(lhs);
    computed_.push_back(lhs);
  }

  /// A second writer: c += f(x) over c's axes (x broadcast or reduced into c), or one row of c
  /// overwritten at a fixed index.
  void second_writer() {
    const Tensor c = any(computed_);
    const bool row = !c.axes.empty() && chance(0.5);
    std::vector<std::int64_t> lhs_fixed(c.axes.size(), -1);
    if (row) {
      const std::size_t k = static_cast<std::size_t>(pick(0, static_cast<int>(c.axes.size()) - 1));
      lhs_fixed[k] = pick(0, static_cast<int>(size(c.axes[k])) - 1);
    }
    std::vector<Read> reads = operands(chance(0.5) ? 2 : 1);
    for (const auto& r : reads)
      if (r.tensor.node == c.node) return;  // reading c while writing it is a recurrence
    emit(c, lhs_fixed, row ? Op::Arg2 : Op::Add, false, reads.size() == 2 ? binop() : unop(), reads);
  }

  /// sel[i, v] = (ids[i] == range[v]); out[i, d] = sum_v sel[i, v] * table[v, d] (an embedding's
  /// gather), and half the time its transpose scat[v, d] = sum_i sel[i, v] * out[i, d] (the
  /// embedding's backward, which the optimizer turns into a scatter: ids repeat and fall
  /// outside the table).
  void one_hot_select() {
    const int i = ids_.axes[0], v = range_.axes[0], d = table_.axes[1];
    Tensor sel = make("sel", {i, v});
    emit(sel, {-1, -1}, Op::Arg2, true, Op::Cmpeq, {read_of(ids_, false), read_of(range_, false)});
    const Tensor out = sum_of_products("gather", d != i ? std::vector<int>{i, d} : std::vector<int>{i}, sel, table_);
    if (chance(0.5)) sum_of_products("scatter", d != i ? std::vector<int>{v, d} : std::vector<int>{v}, sel, out);
  }

  /// A new node over `axes`: the sum of a * b over their other axes.
  Tensor sum_of_products(const std::string& what, const std::vector<int>& axes, const Tensor& a, const Tensor& b) {
    Tensor out = make(what, axes);
    emit(out, std::vector<std::int64_t>(axes.size(), -1), Op::Add, true, Op::Mul, {read_of(a, false), read_of(b, false)});
    values_.push_back(out);
    computed_.push_back(out);
    return out;
  }

  void step(bool one_hot) {
    const double r = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (one_hot && r < 0.25) one_hot_select();
    else if (!computed_.empty() && r < 0.45) second_writer();
    else new_node();
  }

  void mark_outputs() {
    if (computed_.empty()) new_node();
    for (std::size_t k = 0; k < computed_.size(); ++k) {
      if (k + 1 != computed_.size() && !chance(0.3)) continue;
      ir::update_memory_mode(*computed_[k].node, ir::MemoryMode::Materialized, 901);
      program_.outputs.push_back(computed_[k].node);
    }
  }
};

}  // namespace

GeneratedProgram generate_program(std::uint64_t seed, const std::string& prefix) {
  return Generator(seed, prefix).run();
}

GeneratedProgram concatenate(const std::vector<GeneratedProgram>& programs) {
  GeneratedProgram all;
  for (const auto& p : programs) {
    all.comp.body.insert(all.comp.body.end(), p.comp.body.begin(), p.comp.body.end());
    all.inputs.insert(all.inputs.end(), p.inputs.begin(), p.inputs.end());
    all.input_values.insert(all.input_values.end(), p.input_values.begin(), p.input_values.end());
    all.outputs.insert(all.outputs.end(), p.outputs.begin(), p.outputs.end());
    all.reassociation_licensed = all.reassociation_licensed || p.reassociation_licensed;
  }
  return all;
}

}  // namespace cannl::opt::testing
