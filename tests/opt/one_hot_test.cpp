// The one-hot rewrites (semantics 4.8): a reduction over a one-hot selector becomes a guarded
// GetDynamic gather (embedding forward), the transposed pattern a SetDynamic scatter-accumulate
// (embedding backward). Pattern and non-pattern cases on hand-built routines, numeric equality
// with the unrewritten routine on both backends, and the forms the tensor layer produces.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <cstdlib>
#include <limits>
#include <regex>

#include "backends/run_util.h"
#include "cannl/ir/lower.h"
#include "cannl/ir/verify.h"
#include "cannl/nn/blocks.h"
#include "cannl/nn/functional.h"
#include "cannl/opt/optimize.h"
#include "cannl/tensor/autodiff.h"
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

std::shared_ptr<backends::Backend> cc() {
  static auto backend = backends::make_cc_backend();
  return backend;
}

// Runs the routine and its rewrite on both backends: all four agree bit for bit.
std::vector<Bytes> check_rewrite(const backends::CompileRequest& before, const ir::LoweredRoutine& after,
                                 const std::vector<Bytes>& inputs) {
  ir::verify(after);
  const backends::CompileRequest rewritten{after, before.params};
  const auto reference = run_on(*backends::make_interpreter_backend(), before, inputs);
  EXPECT_EQ(run_on(*backends::make_interpreter_backend(), rewritten, inputs), reference);
  EXPECT_EQ(run_on(*cc(), before, inputs), reference);
  EXPECT_EQ(run_on(*cc(), rewritten, inputs), reference);
  return reference;
}

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
  EXPECT_TRUE(has(text, "table[?1 := ids[i0]")) << text;
  EXPECT_FALSE(has(text, "for i2")) << text;  // the vocabulary loop is gone
  const std::vector<float> ids{4, 0, 7, -1};   // 7 and -1 select no row
  const auto out = check_rewrite(r, after, {bytes_of(table_values()), bytes_of(ids), {}});
  EXPECT_EQ(values_of<float>(out[2]), (std::vector<float>{-13, 14.5f, 1e-3f, 1, 2, 3, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ir::print_loop_ir(rewrite_one_hot_reductions(after, {})), text);  // idempotent
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
  if (std::getenv("CANNL_ONE_HOT_DUMP")) std::cout << passes_text(o);
  EXPECT_TRUE(std::regex_search(text, std::regex("wte\\[[^\\]]*\\?"))) << text;  // the gather
  EXPECT_TRUE(std::regex_search(text, std::regex("grad_wte\\[[^\\]]*\\?[^\n]* add= "))) << text;  // the scatter
}

}  // namespace
}  // namespace cannl
