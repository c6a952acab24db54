// Matmul-like nests the default CPU schedule reorders into register tiles (schedule/matmul_nest.h):
// a channels-last convolution, its weight gradient and its input gradient. Without the
// re-association licence the reordered nest is bitwise the lowered one (each cell keeps its order
// of updates); with it, within rounding; skinny nests are left alone.
#include <gtest/gtest.h>

#include "cannl/schedule/default_cpu.h"
#include "schedule/matmul_nest.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

ir::AxisIndex sum(ir::Symbol a, ir::Symbol b) { return {{{1, a}, {1, b}}, 0}; }

// out[b, oh, ow, co] += x[b, oh + kh, ow + kw, ci] * w[co, kh, kw, ci], loops in the lowering's
// order b, oh, ow, co, ci, kh, kw (ci before the window loops), and the two gradients.
struct Conv {
  std::int64_t batch, size, channels, features, window = 3;
  std::int64_t out_size = size - window + 1;
  ir::NodeRef x = ir::make_node("x", ir::DType::F32, {batch, size, size, channels});
  ir::NodeRef w = ir::make_node("w", ir::DType::F32, {features, window, window, channels});
  ir::NodeRef out = ir::make_node("out", ir::DType::F32, {batch, out_size, out_size, features});
  ir::Symbol b = ir::fresh_symbol(), oh = ir::fresh_symbol(), ow = ir::fresh_symbol(), co = ir::fresh_symbol(),
             ci = ir::fresh_symbol(), kh = ir::fresh_symbol(), kw = ir::fresh_symbol();

  Conv(std::int64_t b_, std::int64_t s_, std::int64_t c_, std::int64_t f_) : batch(b_), size(s_), channels(c_), features(f_) {}

  std::vector<ir::AxisIndex> x_at() const { return {it(b), sum(oh, kh), sum(ow, kw), it(ci)}; }
  std::vector<ir::AxisIndex> w_at() const { return {it(co), it(kh), it(kw), it(ci)}; }
  std::vector<ir::AxisIndex> out_at() const { return {it(b), it(oh), it(ow), it(co)}; }

  ir::StmtRef accumulate(const ir::NodeRef& d, const std::vector<ir::AxisIndex>& at, const ir::NodeRef& p,
                         const std::vector<ir::AxisIndex>& p_at, const ir::NodeRef& q,
                         const std::vector<ir::AxisIndex>& q_at) const {
    const auto product = ir::apply(ir::Op::Mul, ir::DType::F32, {ir::get(p, p_at), ir::get(q, q_at)});
    return ir::set(d, at, ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(d, at), product}));
  }
  ir::StmtRef nest(ir::StmtRef leaf, bool channels_innermost = false) const {
    std::vector<std::pair<ir::Symbol, std::int64_t>> inner_first{
        {kw, window}, {kh, window}, {ci, channels}, {co, features}, {ow, out_size}, {oh, out_size}, {b, batch}};
    if (channels_innermost) inner_first = {{ci, channels}, {kw, window}, {kh, window}, {co, features},
                                           {ow, out_size}, {oh, out_size}, {b, batch}};
    for (const auto& [s, n] : inner_first) leaf = ir::for_loop(s, 0, n, leaf);
    return leaf;
  }
  ir::LoweredRoutine forward(bool channels_innermost = false) const {
    return {"conv", ir::seq({ir::zero_out(out), nest(accumulate(out, out_at(), x, x_at(), w, w_at()), channels_innermost)}), {}};
  }
  ir::LoweredRoutine weight_gradient() const {  // w is the gradient, out the incoming one
    return {"conv_dw", ir::seq({ir::zero_out(w), nest(accumulate(w, w_at(), out, out_at(), x, x_at()))}), {}};
  }
  ir::LoweredRoutine input_gradient() const {  // x[b, oh + kh, ..] is written: not injective
    return {"conv_dx", ir::seq({ir::zero_out(x), nest(accumulate(x, x_at(), out, out_at(), w, w_at()))}), {}};
  }
};

CpuScheduleOptions options(bool reassociate) {
  CpuScheduleOptions o;
  o.reassociate = reassociate;
  return o;
}

TEST(MatmulNest, ConvolutionBecomesATileBitwiseWithoutTheLicence) {
  const Conv c(16, 3, 16, 16);  // one output pixel: 16 x 16 x 16 tiles, few cells for the interpreter
  // k must stay the innermost reduction: with ci there (16), b and co move inside kh, kw.
  const ScheduledRoutine s = default_cpu_schedule(c.forward(true), options(false));
  const std::string text = ir::print_loop_ir(s.routine);
  EXPECT_TRUE(has(text, "tile_mma ")) << text;
  EXPECT_TRUE(std::any_of(s.transforms.begin(), s.transforms.end(),
                          [](const Transform& t) { return std::holds_alternative<Swap>(t); }));
  EXPECT_EQ(compare(run_interp(c.forward(true)), run_interp(s.routine), Tolerance::Bitwise), "");
  // With the window loops innermost, k would be kw (3 steps): not worth a tile.
  EXPECT_FALSE(has(ir::print_loop_ir(default_cpu_schedule(c.forward(), options(false)).routine), "tile_mma "));
}

TEST(MatmulNest, LicensedPlansTileTheWidestReductionAndInputGradients) {
  const Conv c(16, 3, 16, 16);
  const auto lowered_k = [&](const ir::LoweredRoutine& r) {
    const auto& top = std::get<ir::For>(std::get<ir::Seq>(r.body->node).stmts[1]->node);
    const auto plan = detail::plan_matmul_nest(top, 4096, true);
    return plan ? std::optional<ir::Symbol>(plan->tile.k) : std::nullopt;
  };
  EXPECT_EQ(lowered_k(c.forward()), std::optional<ir::Symbol>(c.ci));
  EXPECT_EQ(lowered_k(c.weight_gradient()), std::optional<ir::Symbol>(c.b));
  EXPECT_EQ(lowered_k(c.input_gradient()), std::optional<ir::Symbol>(c.co));
  for (const ir::LoweredRoutine& r : {c.forward(), c.weight_gradient(), c.input_gradient()}) {
    const ScheduledRoutine s = default_cpu_schedule(r, options(true));
    EXPECT_TRUE(has(ir::print_loop_ir(s.routine), "tile_mma ")) << r.name;
    EXPECT_EQ(compare(run_interp(r), run_interp(s.routine), Tolerance::Reassociated), "") << r.name;
  }
  // Without the licence the input gradient (several (oh, kh) per cell) keeps its nest.
  EXPECT_FALSE(has(ir::print_loop_ir(default_cpu_schedule(c.input_gradient(), options(false)).routine), "tile_mma "));
}

TEST(MatmulNest, SkinnyNestsStayPlain) {
  const Conv thin(8, 12, 6, 3);  // 3 features of a 32-wide tile, k of 6: packing costs more
  for (const ir::LoweredRoutine& r : {thin.forward(), thin.weight_gradient()}) {
    const ScheduledRoutine s = default_cpu_schedule(r, options(true));
    EXPECT_FALSE(has(ir::print_loop_ir(s.routine), "tile_mma ")) << ir::print_loop_ir(s.routine);
  }
}

}  // namespace
}  // namespace cannl::schedule::testing
