// Matmul-like nests the default CPU schedule reorders into register tiles (schedule/matmul_nest.h):
// a channels-last convolution, its weight gradient and its input gradient. Without the
// re-association licence the reordered nest is bitwise the lowered one (each cell keeps its order
// of updates); with it, within rounding; skinny nests are left alone.
#include <gtest/gtest.h>

#include "cannl/ir/tree_mapper.h"

#include "cannl/schedule/default_cpu.h"
#include "cannl/schedule/trace.h"
#include "schedule/matmul_nest.h"
#include "backends/run_util.h"
#include "cannl/backends/backend.h"
#include "cannl/support/error.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

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

  Conv(std::int64_t b_, std::int64_t s_, std::int64_t c_, std::int64_t f_, std::int64_t w_ = 3)
      : batch(b_), size(s_), channels(c_), features(f_), window(w_) {}

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
  // With the window loops innermost k is kw (3 steps); the tile folds kh and ci into its steps,
  // in nest order, so the result stays bitwise.
  const ScheduledRoutine folded = default_cpu_schedule(c.forward(), options(false));
  const std::string folded_text = ir::print_loop_ir(folded.routine);
  EXPECT_TRUE(has(folded_text, "tile_mma ")) << folded_text;
  EXPECT_TRUE(has(folded_text, "(folded: ")) << folded_text;
  EXPECT_EQ(compare(run_interp(c.forward()), run_interp(folded.routine), Tolerance::Bitwise), "");
  // The schedule, folds included, round-trips through its trace onto an equal program.
  const std::string trace = print_trace(record(c.forward(), folded.transforms));
  EXPECT_TRUE(has(trace, " fold ")) << trace;
  const Conv again(16, 3, 16, 16);
  EXPECT_EQ(ir::print_loop_ir(replay(again.forward(), parse_trace(trace))), folded_text);
}

// Folded tiles rendered by the C backend (the `_nd` driver with offset tables: an implicit
// im2col): bitwise the lowered nest for the forward convolution and the weight gradient, within
// rounding for the input gradient, whose folded cells are only those d stays injective over.
TEST(MatmulNest, FoldedTilesOnTheCBackend) {
  try {
    (void)test_util::cc();
  } catch (const BackendUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
  const Conv c(4, 12, 6, 16);
  for (const bool reassociate : {false, true}) {
    for (const ir::LoweredRoutine& r : {c.forward(), c.weight_gradient(), c.input_gradient()}) {
      const bool licensed_only = r.name == "conv_dx";
      if (licensed_only && !reassociate) continue;
      const ScheduledRoutine s = default_cpu_schedule(r, options(reassociate));
      const std::string text = ir::print_loop_ir(s.routine);
      ASSERT_TRUE(has(text, "(folded: ")) << r.name << "\n" << text;
      const auto params = ir::nodes_of(r.body);
      const std::vector<test_util::Bytes> inputs = test_inputs(params);
      const backends::CompileRequest scheduled{s.routine, params};
      const std::string source = test_util::cc()->compile(scheduled)->source();
      ASSERT_NE(source.find("_nd("), std::string::npos) << r.name;
      // The forward's ZeroOut is the tile call's: dropped, the call told its output starts at 0.
      if (r.name == "conv") {
        EXPECT_NE(source.find("starts at zero: the call sets its cells"), std::string::npos);
      }
      // The input gradient's partials (86 KB, a heap local) are zeroed by their first
      // statement, the tile: no memset at the declaration.
      if (r.name == "conv_dx") {
        EXPECT_NE(source.find("zeroed by its first statement"), std::string::npos) << source;
      }
      const auto serial = test_util::run_on(*test_util::cc(), {r, params}, inputs);
      const auto tiled = test_util::run_on(*test_util::cc(), scheduled, inputs);
      NodeBytes want, got;
      for (std::size_t k = 0; k < params.size(); ++k) {
        want[params[k]->id] = serial[k];
        got[params[k]->id] = tiled[k];
      }
      EXPECT_EQ(compare(want, got, licensed_only ? Tolerance::Reassociated : Tolerance::Bitwise), "")
          << r.name << (reassociate ? " (licensed)" : "") << "\n" << text;
    }
  }
}

// A first convolution's weight gradient, 32 output channels by 75 taps (5 x 5 x 3) over a long
// reduction, fills the 12 x 32 register tiles better with the taps as rows: the tile is swapped,
// d's unit stride along its rows, and stays bitwise the lowered nest.
TEST(MatmulNest, FewCellsOverALongReductionTakeTheFullerTileOrientation) {
  try {
    (void)test_util::cc();
  } catch (const BackendUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
  const Conv c(4, 36, 3, 32, 5);
  const ir::LoweredRoutine r = c.weight_gradient();
  const ScheduledRoutine s = default_cpu_schedule(r, options(false));
  std::vector<std::int64_t> shape;
  ir::for_each_stmt(s.routine.body, [&](const ir::Stmt& x) {
    if (const auto* t = std::get_if<ir::TileMma>(&x.node)) shape = {t->rows(), t->cols(), t->steps()};
  });
  EXPECT_EQ(shape, (std::vector<std::int64_t>{75, 32, 4 * 32 * 32})) << ir::print_loop_ir(s.routine);
  const auto params = ir::nodes_of(r.body);
  const std::vector<test_util::Bytes> inputs = test_inputs(params);
  const auto serial = test_util::run_on(*test_util::cc(), {r, params}, inputs);
  const auto tiled = test_util::run_on(*test_util::cc(), {s.routine, params}, inputs);
  EXPECT_EQ(serial, tiled);
  // Few steps: the usual orientation (columns along d's unit stride).
  const Conv short_one(1, 12, 3, 32, 5);
  const ScheduledRoutine plain = default_cpu_schedule(short_one.weight_gradient(), options(false));
  ir::for_each_stmt(plain.routine.body, [&](const ir::Stmt& x) {
    if (const auto* t = std::get_if<ir::TileMma>(&x.node)) shape = {t->rows(), t->cols()};
  });
  EXPECT_EQ(shape, (std::vector<std::int64_t>{32, 75}));
}

TEST(MatmulNest, FoldingNeedsRolesAndInjectiveCells) {
  // A batch loop (in d, a and b) is not a row, a column or a step.
  const auto a = ir::make_node("a", ir::DType::F32, {2, 4, 4});
  const auto bm = ir::make_node("bm", ir::DType::F32, {2, 4, 4});
  const auto d = ir::make_node("d", ir::DType::F32, {2, 4, 4});
  const ir::Symbol bb = ir::fresh_symbol(), i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto product = ir::apply(ir::Op::Mul, ir::DType::F32, {ir::get(a, {it(bb), it(i), it(k)}), ir::get(bm, {it(bb), it(k), it(j)})});
  const std::vector<ir::AxisIndex> at{it(bb), it(i), it(j)};
  const ir::LoweredRoutine batched{
      "bmm", ir::for_loop(bb, 0, 2, ir::for_loop(i, 0, 4, ir::for_loop(j, 0, 4, ir::for_loop(k, 0, 4,
          ir::set(d, at, ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(d, at), product})))))), {}};
  expect_schedule_error([&] { schedule::apply(batched, Tensorize{i, j, k, {bb}}); },
                        {"fold i0", "not a row", "keep it outside the tile"});
  EXPECT_NO_THROW(schedule::apply(batched, Tensorize{i, j, k}));

  // The input gradient with ow, ci, k = co innermost: folding oh and kh as well would store two
  // tile cells (oh, kh) and (oh + 1, kh - 1) to one element of x.
  const Conv c(2, 5, 2, 2);
  ir::StmtRef leaf = c.accumulate(c.x, c.x_at(), c.out, c.out_at(), c.w, c.w_at());
  const std::vector<std::pair<ir::Symbol, std::int64_t>> inner_first{
      {c.co, 2}, {c.ci, 2}, {c.ow, 3}, {c.kw, 3}, {c.kh, 3}, {c.oh, 3}, {c.b, 2}};
  for (const auto& [sym, n] : inner_first) leaf = ir::for_loop(sym, 0, n, leaf);
  const ir::LoweredRoutine dx{"conv_dx", leaf, {}};
  expect_schedule_error([&] { schedule::apply(dx, Tensorize{c.ow, c.ci, c.co, {c.b, c.oh, c.kh, c.kw}}); },
                        {"two cells of the tile could store to one element", "fold fewer"});
  // The fold must reach from its outermost loop down to the three.
  expect_schedule_error([&] { schedule::apply(dx, Tensorize{c.ow, c.ci, c.co, {c.b}}); },
                        {"not the whole perfect nest"});
}

TEST(MatmulNest, LicensedPlansTileTheWidestReductionAndInputGradients) {
  const Conv c(16, 3, 16, 16);
  const auto lowered_k = [&](const ir::LoweredRoutine& r) {
    const auto& top = std::get<ir::For>(std::get<ir::Seq>(r.body->node).stmts[1]->node);
    const auto plan = detail::plan_matmul_nest(top, 4096, true, ir::cpu_target(64));
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
  // One feature, one channel: the forward tile is 1 column of 32 with 9 steps (a padded edge
  // tile per row panel), the weight gradient 1 x 9 cells over 4096 steps (all packing).
  const Conv thin(64, 10, 1, 1);
  for (const ir::LoweredRoutine& r : {thin.forward(), thin.weight_gradient()}) {
    const ScheduledRoutine s = default_cpu_schedule(r, options(true));
    EXPECT_FALSE(has(ir::print_loop_ir(s.routine), "tile_mma ")) << ir::print_loop_ir(s.routine);
  }
}

}  // namespace
}  // namespace cannl::schedule::testing
