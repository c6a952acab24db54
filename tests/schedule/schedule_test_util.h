#pragma once
// Helpers of the schedule tests: run a routine on the reference interpreter from memory filled
// with deterministic values (the same for every run), read every node back, and compare two
// runs bitwise or within a tolerance.
//
//   auto before = run_interp(r);  auto after = run_interp(schedule::apply(r, t));
//   EXPECT_EQ(compare(before, after, Tolerance::Bitwise), "");

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../interp/test_memory.h"
#include "backends/run_util.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/ir/verify.h"
#include "cannl/support/error.h"

namespace cannl::schedule::testing {

/// Whether `needle` occurs in `text` (a printed routine, a trace, a message).
inline bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

using NodeBytes = std::map<int, std::vector<std::byte>>;  // node id -> buffer after the run

/// Deterministic small values: exact in f32, mixed signs, so sums in any order of a few of
/// them are usually exact too (re-associated results still differ only in rounding).
inline float test_value(int node_id, std::size_t k) {
  const std::uint64_t h = (static_cast<std::uint64_t>(node_id) * 2654435761u + k * 40503u) % 97;
  return static_cast<float>(static_cast<int>(h) - 48) / 16.0f;
}

/// Host buffers of the f32 `params` filled with test_value: the memory run_interp starts from,
/// for running the same routine on a compiled backend.
inline std::vector<test_util::Bytes> test_inputs(const std::vector<ir::NodeRef>& params) {
  std::vector<test_util::Bytes> inputs;
  for (const auto& n : params) {
    std::vector<float> values(static_cast<std::size_t>(n->num_elements()));
    for (std::size_t k = 0; k < values.size(); ++k) values[k] = test_value(n->id, k);
    inputs.push_back(test_util::bytes_of(values));
  }
  return inputs;
}

/// Interpreter memory for `nodes`: literals (an unpadded node with host data: token ids, masks)
/// hold their values, other f32 nodes test_value, other dtypes zeros.
inline void fill_test_memory(interp::testing::TestMemory& mem, const std::vector<ir::NodeRef>& nodes) {
  for (const auto& n : nodes) {
    mem.add(n);
    if (n->host_init && !n->is_padded() && n->host_init->size() == n->size_in_bytes()) {
      mem.fill(n, *n->host_init);
      continue;
    }
    if (n->dtype != ir::DType::F32) continue;
    std::vector<float> values(static_cast<std::size_t>(n->num_elements()));
    for (std::size_t k = 0; k < values.size(); ++k) values[k] = test_value(n->id, k);
    mem.fill(n, values);
  }
}

/// Runs `r` on the interpreter with every node it touches filled by test_value (f32 nodes; other
/// dtypes start zeroed) and returns every node's bytes afterwards. Packed operands (a hoisted
/// Stage) are filled first, as the runtime does before a routine's first run.
inline NodeBytes run_interp(const ir::LoweredRoutine& r, std::vector<std::int64_t> statics = {}) {
  ir::verify(r);
  interp::testing::TestMemory mem;
  auto nodes = ir::nodes_of(r.body);
  for (const ir::PackedOperand& p : r.packed)
    if (std::find(nodes.begin(), nodes.end(), p.source) == nodes.end()) nodes.push_back(p.source);
  fill_test_memory(mem, nodes);
  for (const ir::PackedOperand& p : r.packed) interp::run({r.name + "_pack", p.fill, {}, {}}, mem.buffers(), {});
  interp::run(r, mem.buffers(), statics);
  NodeBytes out;
  for (const auto& n : nodes) {
    const auto bytes = mem.read<std::byte>(n);
    out[n->id] = bytes;
  }
  return out;
}

// The scheduled routine on the C backend computes the interpreter's bits (checked with EXPECT_EQ;
// skipped without a C compiler); returns the interpreter's result on it.
inline NodeBytes agree_on_both(const ir::LoweredRoutine& scheduled) {
  const NodeBytes on_interp = run_interp(scheduled);
  try {
    (void)test_util::cc();
  } catch (const BackendUnavailable&) {
    return on_interp;  // the interpreter alone
  }
  const auto params = ir::nodes_of(scheduled.body);
  const auto compiled = test_util::run_on(*test_util::cc(), {scheduled, params}, test_inputs(params));
  for (std::size_t k = 0; k < params.size(); ++k)
    EXPECT_EQ(compiled[k], on_interp.at(params[k]->id)) << params[k]->debug_name() << "\n" << ir::print_loop_ir(scheduled);
  return on_interp;
}

enum class Tolerance { Bitwise, Reassociated };

/// "" when equal; else the first differing f32 cell. Reassociated accepts relative error 1e-4.
inline std::string compare(const NodeBytes& expected, const NodeBytes& actual, Tolerance tolerance) {
  for (const auto& [id, bytes] : expected) {
    const auto it = actual.find(id);
    if (it == actual.end()) return "node n" + std::to_string(id) + " missing";
    if (it->second == bytes) continue;
    if (tolerance == Tolerance::Bitwise || bytes.size() != it->second.size())
      return "node n" + std::to_string(id) + " differs bitwise";
    for (std::size_t e = 0; e + sizeof(float) <= bytes.size(); e += sizeof(float)) {
      float x, y;
      std::memcpy(&x, bytes.data() + e, sizeof x);
      std::memcpy(&y, it->second.data() + e, sizeof y);
      if (!(std::fabs(x - y) <= 1e-4f * std::max(1.0f, std::fabs(x))) && !(std::isnan(x) && std::isnan(y)))
        return "node n" + std::to_string(id) + " cell " + std::to_string(e / sizeof(float)) + ": " +
               std::to_string(x) + " vs " + std::to_string(y);
    }
  }
  return "";
}

/// Runs `body` and checks it throws ScheduleError whose message contains every substring.
template <class F>
void expect_schedule_error(F body, const std::vector<std::string>& substrings) {
  try {
    body();
    ADD_FAILURE() << "expected ScheduleError";
  } catch (const ScheduleError& e) {
    for (const auto& s : substrings)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << "message '" << e.what() << "' lacks '" << s << "'";
  }
}

inline ir::AxisIndex it(ir::Symbol s) { return ir::AxisIndex::iterator(s); }

/// c[i, j] += a[i, k] * b[k, j] over i < m, j < n, k < kk (loops i, j, k), after zeroing c.
struct Matmul {
  std::int64_t m, n, kk;
  ir::NodeRef a = ir::make_node("a", ir::DType::F32, {m, kk});
  ir::NodeRef b = ir::make_node("b", ir::DType::F32, {kk, n});
  ir::NodeRef c = ir::make_node("c", ir::DType::F32, {m, n});
  ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();

  Matmul(std::int64_t m_, std::int64_t n_, std::int64_t k_) : m(m_), n(n_), kk(k_) {}
  ir::StmtRef update() const {
    using ir::DType;
    const auto product = ir::apply(ir::Op::Mul, DType::F32, {ir::get(a, {it(i), it(k)}), ir::get(b, {it(k), it(j)})});
    return ir::set(c, {it(i), it(j)}, ir::apply(ir::Op::Add, DType::F32, {ir::get(c, {it(i), it(j)}), product}), "c =+ a * b");
  }
  ir::StmtRef nest() const {
    return ir::for_loop(i, 0, m, ir::for_loop(j, 0, n, ir::for_loop(k, 0, kk, update())));
  }
  ir::LoweredRoutine routine() const {
    return {"matmul", ir::seq({ir::zero_out(c), nest()}), {}};
  }
};

/// out[i, j] = x[i, j] * 2 + y[j] (elementwise with a broadcast), loops i, j.
struct Elementwise {
  std::int64_t m, n;
  ir::NodeRef x = ir::make_node("x", ir::DType::F32, {m, n});
  ir::NodeRef y = ir::make_node("y", ir::DType::F32, {n});
  ir::NodeRef out = ir::make_node("out", ir::DType::F32, {m, n});
  ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();

  Elementwise(std::int64_t m_, std::int64_t n_) : m(m_), n(n_) {}
  ir::LoweredRoutine routine() const {
    using ir::DType;
    const auto twice = ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, {it(i), it(j)}), ir::constant(2, DType::F32)});
    const auto value = ir::apply(ir::Op::Add, DType::F32, {twice, ir::get(y, {it(j)})});
    return {"elementwise", ir::for_loop(i, 0, m, ir::for_loop(j, 0, n, ir::set(out, {it(i), it(j)}, value))), {}};
  }
};

/// s[i] = sum (or `op`: max, min) over r of x[i, r] (zeroed first), loops i, r.
struct RowSum {
  std::int64_t m, n;
  ir::Op op = ir::Op::Add;
  ir::NodeRef x = ir::make_node("x", ir::DType::F32, {m, n});
  ir::NodeRef s = ir::make_node("s", ir::DType::F32, {m});
  ir::Symbol i = ir::fresh_symbol(), r = ir::fresh_symbol();

  RowSum(std::int64_t m_, std::int64_t n_, ir::Op op_ = ir::Op::Add) : m(m_), n(n_), op(op_) {}
  ir::LoweredRoutine routine() const {
    using ir::DType;
    const auto sum = ir::apply(op, DType::F32, {ir::get(s, {it(i)}), ir::get(x, {it(i), it(r)})});
    return {"row_sum", ir::seq({ir::zero_out(s), ir::for_loop(i, 0, m, ir::for_loop(r, 0, n, ir::set(s, {it(i)}, sum)))}), {}};
  }
};

/// Whether kernel `body` holds a barrier below its top level (in a block, a serial loop or an If
/// there, as the final lowering round orders a block), which GpuEmulation cannot split into phases.
inline bool has_nested_barrier(const ir::StmtRef& body) {
  int all = 0;
  ir::for_each_stmt(body, [&](const ir::Stmt& x) { all += std::holds_alternative<ir::Barrier>(x.node) ? 1 : 0; });
  int top = 0;
  for (const auto& x : ir::flatten_seq(body)) top += std::holds_alternative<ir::Barrier>(x->node) ? 1 : 0;
  return all > top;
}

}  // namespace cannl::schedule::testing
