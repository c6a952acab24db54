// The one-hot rewrites (semantics 4.8): a reduction over a one-hot selector becomes a guarded
// GetDynamic gather (embedding forward), the transposed pattern a SetDynamic scatter-accumulate
// (embedding backward). Pattern and non-pattern cases on hand-built routines, numeric equality
// with the unrewritten routine on both backends, and the forms the tensor layer produces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <cstdlib>
#include <limits>
#include <regex>

#include "backends/run_util.h"
#include "opt/backend_agreement.h"
#include "cannl/ir/lower.h"
#include "cannl/ir/verify.h"
#include "cannl/nn/blocks.h"
#include "cannl/nn/functional.h"
#include "cannl/opt/optimize.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/nn/training.h"
#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "opt/one_hot.h"

namespace cannl::opt {
namespace {

using ir::AxisIndex;
using ir::DType;
using ir::Op;
using test_util::Bytes;
using test_util::bytes_of;
using test_util::run_on;
using test_util::values_of;

AxisIndex it(ir::Symbol s) { return AxisIndex::iterator(s); }

using test_util::cc;

using testing::check_rewrite;

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// The embedding forward as lowered: out[p, d] = sum_k (k == ids[p]) * table[k, d].
struct Forward {
  ir::NodeRef table = ir::make_node("table", DType::F32, {5, 3});
  ir::NodeRef ids;
  ir::NodeRef out = ir::make_node("out", DType::F32, {4, 3});
  ir::Symbol p = ir::fresh_symbol(), d = ir::fresh_symbol(), k = ir::fresh_symbol();

  explicit Forward(DType id_dtype = DType::F32) : ids(ir::make_node("ids", id_dtype, {4})) {}

  ir::ScalarRef selector(DType compare = DType::F32) const {
    return ir::apply(Op::Cmpeq, compare, {ir::embed_index(it(k)), ir::get(ids, {it(p)})});
  }
  ir::ScalarRef row() const { return ir::get(table, {it(k), it(d)}); }
  // The accumulation nest with loops p, d, k (k innermost unless k_outer).
  backends::CompileRequest request(const ir::ScalarRef& contribution, bool k_outer = false,
                                   std::int64_t k_end = 5) const {
    const std::vector<AxisIndex> at{it(p), it(d)};
    auto acc = ir::set(out, at, ir::apply(Op::Add, DType::F32, {ir::get(out, at), contribution}));
    ir::StmtRef nest = k_outer ? ir::for_loop(k, 0, k_end, ir::for_loop(p, 0, 4, ir::for_loop(d, 0, 3, acc)))
                               : ir::for_loop(p, 0, 4, ir::for_loop(d, 0, 3, ir::for_loop(k, 0, k_end, acc)));
    return {ir::LoweredRoutine{"fwd", ir::seq({ir::zero_out(out), nest}), {}}, {table, ids, out}};
  }
};

std::vector<float> table_values() { return {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, -13, 14.5f, 1e-3f}; }

TEST(OneHot, MulSelectorBecomesGuardedGather) {
  Forward f;
  const auto r = f.request(ir::apply(Op::Mul, DType::F32, {f.selector(), f.row()}));
  const auto after = rewrite_one_hot_reductions(r.routine, {});
  const std::string text = ir::print_loop_ir(after);
  EXPECT_TRUE(has(text, "table[?ids[i0], i1]")) << text;
  EXPECT_FALSE(has(text, "for i2")) << text;  // the vocabulary loop is gone
  const std::vector<float> ids{4, 0, 7, -1};   // 7 and -1 select no row
  const auto out = check_rewrite(r, after, {bytes_of(table_values()), bytes_of(ids), {}});
  EXPECT_EQ(values_of<float>(out[2]), (std::vector<float>{-13, 14.5f, 1e-3f, 1, 2, 3, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ir::print_loop_ir(rewrite_one_hot_reductions(after, {})), text);  // idempotent
}

TEST(OneHot, WhereSelectorWithKOuterAndIntegerIds) {
  Forward f(DType::I64);
  const auto where = ir::apply(Op::Where, DType::F32, {f.selector(DType::I64), f.row(), ir::constant(0, DType::F32)});
  const auto r = f.request(where, /*k_outer=*/true);
  const auto after = rewrite_one_hot_reductions(r.routine, {});
  EXPECT_TRUE(has(ir::print_loop_ir(after), "?ids[i0]")) << ir::print_loop_ir(after);
  const std::vector<std::int64_t> ids{3, 5, 1, 3};  // 5 is out of range; 3 repeats
  const auto out = check_rewrite(r, after, {bytes_of(table_values()), bytes_of(ids), {}});
  EXPECT_EQ(values_of<float>(out[2]), (std::vector<float>{10, 11, 12, 0, 0, 0, 4, 5, 6, 10, 11, 12}));
}

TEST(OneHot, NonMatchingReductionsStay) {
  Forward f;
  const auto mul = [&](ir::ScalarRef sel) { return ir::apply(Op::Mul, DType::F32, {std::move(sel), f.row()}); };
  const auto unchanged = [&](const backends::CompileRequest& r) {
    EXPECT_EQ(ir::print_loop_ir(rewrite_one_hot_reductions(r.routine, {})), ir::print_loop_ir(r.routine));
  };
  // The loop covers 4 of the table's 5 rows: an id of 4 must still give 0.
  unchanged(f.request(mul(f.selector()), false, 4));
  // A u8 comparison wraps k = 256 to 0: with 300 rows, e == 0 would select two rows.
  Forward wide;
  wide.table = ir::make_node("table", DType::F32, {300, 3});
  unchanged(wide.request(ir::apply(Op::Mul, DType::F32, {wide.selector(DType::U8), wide.row()}), false, 300));
  // e depends on k.
  auto k_dependent = ir::apply(Op::Cmpeq, DType::F32, {ir::embed_index(it(f.k)), ir::get(f.ids, {it(f.k)})});
  unchanged(f.request(mul(k_dependent), false, 4));
  // A Where whose other branch is not 0, and a product that is not a selector.
  unchanged(f.request(ir::apply(Op::Where, DType::F32, {f.selector(), f.row(), ir::constant(1, DType::F32)})));
  unchanged(f.request(ir::apply(Op::Mul, DType::F32, {ir::apply(Op::Cmplt, DType::F32, {ir::embed_index(it(f.k)), ir::get(f.ids, {it(f.p)})}), f.row()})));
  // A counter with an offset: (k + 1 == e).
  auto shifted = ir::apply(Op::Cmpeq, DType::F32, {ir::embed_index(AxisIndex{{{1, f.k}}, 1}), ir::get(f.ids, {it(f.p)})});
  unchanged(f.request(mul(shifted)));
}

// The embedding backward: grad[k, d] += sum_p (k == ids[p]) * g[p, d], loops p, d, k or k, p, d.
backends::CompileRequest backward(bool k_outer, DType compare = DType::F32, bool fused = false) {
  auto ids = ir::make_node("ids", DType::F32, {5});
  auto g = ir::make_node("g", DType::F32, {5, 2});
  auto grad = ir::make_node("grad", DType::F32, {4, 2});
  const ir::Symbol p = ir::fresh_symbol(), d = ir::fresh_symbol(), k = ir::fresh_symbol();
  const std::vector<AxisIndex> at{it(k), it(d)};
  auto sel = ir::apply(Op::Cmpeq, compare, {ir::embed_index(it(k)), ir::get(ids, {it(p)})});
  auto contribution = ir::apply(Op::Mul, DType::F32, {ir::get(g, {it(p), it(d)}), sel});
  auto acc = ir::set(grad, at, ir::apply(Op::Add, DType::F32, {ir::get(grad, at), contribution}), "grad =+ g * onehot");
  if (fused)  // the simplifier's form under fuse_multiply_add
    acc = ir::set(grad, at, ir::apply(Op::Fma, DType::F32, {ir::get(g, {it(p), it(d)}), sel, ir::get(grad, at)}), "grad =+ g * onehot");
  ir::StmtRef nest = k_outer ? ir::for_loop(k, 0, 4, ir::for_loop(p, 0, 5, ir::for_loop(d, 0, 2, acc)))
                             : ir::for_loop(p, 0, 5, ir::for_loop(d, 0, 2, ir::for_loop(k, 0, 4, acc)));
  return {ir::LoweredRoutine{"bwd", ir::seq({ir::zero_out(grad), nest}), {}}, {ids, g, grad}};
}

// The column loop d, which picks grad's static axis, runs outside the rows p that pick the
// scattered row: each cell still takes its rows in order (1e8 and -1e8 land on one cell).
TEST(OneHot, TransposedPatternBecomesSerialScatter) {
  const std::vector<float> ids{2, 9, 2, -1, 0.5f};  // 2 repeats; 9, -1 and 0.5 select no row
  const std::vector<float> g{1e8f, 1, 1, 2, -1e8f, 3, 7, 7, 8, 8};
  for (bool k_outer : {false, true}) {
    const auto r = backward(k_outer);
    const auto after = rewrite_one_hot_reductions(r.routine, {});
    const std::string text = ir::print_loop_ir(after);
    EXPECT_TRUE(has(text, "for i0 in [0, 2):\n  for i1 in [0, 5):\n    grad[?ids[i1], i0] add= g[i1, i0]")) << text;
    EXPECT_FALSE(has(text, "for i2")) << text;
    const auto out = check_rewrite(r, after, {bytes_of(ids), bytes_of(g), {}});
    EXPECT_EQ(values_of<float>(out[2]), (std::vector<float>{0, 0, 0, 0, 0, 4, 0, 0}));
    // Deterministic: a second run gives the same bytes.
    EXPECT_EQ(check_rewrite(r, after, {bytes_of(ids), bytes_of(g), {}}), out);
  }
}

// Both patterns in the simplifier's fused form d = fma(x, selector, d) (fuse_multiply_add), as
// a GPT-2 embedding reaches the pass: the same gather and scatter, bitwise the fused loop's.
TEST(OneHot, FusedAccumulationsAreRewrittenToo) {
  Forward f;
  const std::vector<AxisIndex> at{it(f.p), it(f.d)};
  const auto fused = ir::set(f.out, at, ir::apply(Op::Fma, DType::F32, {f.row(), f.selector(), ir::get(f.out, at)}));
  const ir::StmtRef nest = ir::for_loop(f.p, 0, 4, ir::for_loop(f.d, 0, 3, ir::for_loop(f.k, 0, 5, fused)));
  const backends::CompileRequest r{ir::LoweredRoutine{"fwd", ir::seq({ir::zero_out(f.out), nest}), {}}, {f.table, f.ids, f.out}};
  const auto after = rewrite_one_hot_reductions(r.routine, {});
  const std::string text = ir::print_loop_ir(after);
  EXPECT_TRUE(has(text, "table[?ids[i0], i1]")) << text;
  EXPECT_FALSE(has(text, "for i2")) << text;
  const std::vector<float> ids{4, 0, 7, -1};
  const auto out = check_rewrite(r, after, {bytes_of(table_values()), bytes_of(ids), {}});
  EXPECT_EQ(values_of<float>(out[2]), (std::vector<float>{-13, 14.5f, 1e-3f, 1, 2, 3, 0, 0, 0, 0, 0, 0}));

  const std::vector<float> grad_ids{2, 9, 2, -1, 0.5f};
  const std::vector<float> g{1e8f, 1, 1, 2, -1e8f, 3, 7, 7, 8, 8};
  for (bool k_outer : {false, true}) {
    const auto b = backward(k_outer, DType::F32, /*fused=*/true);
    const auto scattered = rewrite_one_hot_reductions(b.routine, {});
    EXPECT_TRUE(has(ir::print_loop_ir(scattered), "for i0 in [0, 2):\n  for i1 in [0, 5):\n    grad[?ids[i1], i0] add= g[i1, i0]")) << ir::print_loop_ir(scattered);
    const auto grad = check_rewrite(b, scattered, {bytes_of(grad_ids), bytes_of(g), {}});
    EXPECT_EQ(values_of<float>(grad[2]), (std::vector<float>{0, 0, 0, 0, 0, 4, 0, 0}));
  }
}

}  // namespace
}  // namespace cannl::opt

namespace cannl {
namespace {

// The embedding program as the tensor layer writes it: loss = sum(tanh(wte(one_hot(ids))) * w).
struct EmbeddingProgram {
  Tensor loss;
  Tensor table;
  Tensor weights;
  ir::Comp step;

  explicit EmbeddingProgram(const std::vector<std::int64_t>& ids) {
    reset_tensor_state();
    nn::Embedding wte("wte", 6, 3);
    table = wte.table;
    const auto n = static_cast<std::int64_t>(ids.size());
    Tensor h = wte(nn::one_hot_of_ids(nn::ids_literal("ids", ids, {n}), 6));
    weights = param("check_weights", {.input = nn::Dims{}});
    loss = sum(pointmul(tanh(h), weights));
    step = grad_update_code(loss);
  }
};

std::string passes_text(const opt::Optimized& o) {
  std::string out;
  for (const auto& [name, r] : o.passes) out += "=== " + name + "\n" + ir::print_loop_ir(r);
  return out;
}

TEST(OneHotTensorLayer, EmbeddingForwardAndBackwardAreRewritten) {
  EmbeddingProgram prog({5, 0, 5, 2});
  opt::PassContext ctx;
  ctx.record_passes = true;
  const auto o = opt::optimize(ir::lower(prog.step, "embedding_step"), ctx, true);
  const std::string text = ir::print_loop_ir(o.routine);
  if (std::getenv("ONE_HOT_TEST_DUMP")) std::cout << passes_text(o);
  EXPECT_TRUE(std::regex_search(text, std::regex("wte\\[[^\\]]*\\?"))) << text;  // the gather
  EXPECT_TRUE(std::regex_search(text, std::regex("grad_wte\\[[^\\]]*\\?[^\n]* add= "))) << text;  // the scatter
}

// Ids read through a batch slice (a literal of all batches, one row per step chosen by a
// static index, as the benchmark runner feeds GPT-2), over a vocabulary too long to inline:
// the simplifier has fused the products into fma before the pass; still a gather and a scatter.
TEST(OneHotTensorLayer, IdsThroughABatchSliceAreRewritten) {
  reset_tensor_state();
  nn::Embedding wte("wte", 16, 3);
  const ir::StaticSymbol batch{ir::fresh_symbol(), 2, "batch"};
  Tensor ids = literal("ids", {15, 0, 5, 2, 1, 3, 4, 0}, {.batch = nn::Dims{2, 4}});
  Tensor h = wte(nn::one_hot_of_ids(slice_batch(ids, batch), 16));
  Tensor weights = param("check_weights", {.input = nn::Dims{}});
  Tensor loss = sum(pointmul(tanh(h), weights));
  opt::PassContext ctx = opt::PassContext::from_config("embedding_step");
  ctx.fuse_multiply_add = true;
  ctx.record_passes = true;
  const auto o = opt::optimize(ir::lower(grad_update_code(loss), "embedding_step"), ctx, true);
  const auto simplified = std::find_if(o.passes.begin(), o.passes.end(), [](const auto& p) { return p.first == "simplify"; });
  ASSERT_NE(simplified, o.passes.end());
  const std::string fused = ir::print_loop_ir(simplified->second);
  EXPECT_NE(fused.find("fma(wte["), std::string::npos) << fused;
  const std::string text = ir::print_loop_ir(o.routine);
  EXPECT_TRUE(std::regex_search(text, std::regex("wte\\[[^\\]]*\\?"))) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex("grad_wte\\[[^\\]]*\\?[^\n]* add= "))) << text;
}

// The whole training step, optimized and not, on both backends: the same loss and gradients
// (ids 7 and -1 select no row; 5 repeats, so its gradient row accumulates twice).
TEST(OneHotTensorLayer, OptimizedStepMatchesUnoptimized) {
  test_util::ConfigGuard guard;
  std::vector<std::vector<std::byte>> results[2][2];
  for (int backend = 0; backend < 2; ++backend) {
    for (int optimized = 0; optimized < 2; ++optimized) {
      config::set_override("optimize", optimized ? "true" : "false");
      EmbeddingProgram prog({5, 0, 7, 5, -1, 2});
      auto ctx = backend ? runtime::Context::cpu() : runtime::Context::interpreter();
      train::upload_literals(ctx, {prog.loss});
      auto routine = ctx.compile(prog.step, "embedding_step");
      std::vector<double> table, weights{0.5, -1, 2};
      for (int k = 0; k < 18; ++k) table.push_back(0.25 * k - 2);
      ctx.set_values(prog.table.value(), table);
      ctx.set_values(prog.weights.value(), weights);
      ctx.run(routine);
      results[backend][optimized] = {ctx.get_bytes(prog.loss.value()), ctx.get_bytes(prog.table.grad())};
    }
  }
  EXPECT_EQ(results[0][0], results[0][1]);
  EXPECT_EQ(results[0][0], results[1][0]);
  EXPECT_EQ(results[0][0], results[1][1]);
}

}  // namespace
}  // namespace cannl
