// The tuner's GPU seeds (tune/candidates.h) and the target fields its cache keeps
// (tune/target_fields.h): blocking sketches are whole and launchable on the device and never the
// target's own; a GPU target's tile and tensor-core blockings survive the cache's text form.
#include <gtest/gtest.h>

#include <map>

#include "cannl/ir/target.h"
#include "cannl/schedule/trace.h"
#include "schedule/schedule_test_util.h"
#include "tune/candidates.h"
#include "tune/target_fields.h"

namespace cannl::tune {
namespace {

ir::Target gpu(std::int64_t shared_bytes) {
  ir::Target t = ir::generic_gpu_target({1024, {1024, 1024, 64}, {1 << 30, 65535, 65535}, shared_bytes, 32, 132});
  t.gpu_mma_formats = {ir::NarrowFormat::BF16, ir::NarrowFormat::TF32};
  return t;
}

TEST(GpuSketches, TileBlockingsAreWholeLaunchableAndNotTheTargetsOwn) {
  const ir::Target t = gpu(48 * 1024);
  const auto sketches = gpu_tile_sketches(t);
  EXPECT_GE(sketches.size(), 6u);
  for (const ir::TileBlocking& b : sketches) {
    EXPECT_TRUE(b.valid()) << describe_blocking(b);
    EXPECT_TRUE(ir::fits_device(b, t.gpu)) << describe_blocking(b);
    EXPECT_FALSE(b == t.gpu_tile) << describe_blocking(b);
  }
  // A target with asynchronous copies pipelines a sketch where both stages fit (the final
  // lowering round, ir::pipelined_blocking): every sketch fits still, unpipelined where they do not.
  ir::Target async = t;
  async.gpu_async_copy = true;
  int pipelined = 0;
  for (const ir::TileBlocking& b : sketches) {
    const ir::TileBlocking p = ir::pipelined_blocking(b, async);
    EXPECT_TRUE(ir::fits_device(p, t.gpu)) << describe_blocking(b);
    pipelined += p.async_copy ? 1 : 0;
  }
  EXPECT_GT(pipelined, 0);
  EXPECT_NE(full_target_text(async), full_target_text(t));  // a winner's cache key says so
  // Less shared memory: fewer sketches, every one within it.
  const ir::Target small = gpu(8 * 1024);
  const auto fewer = gpu_tile_sketches(small);
  EXPECT_LT(fewer.size(), sketches.size());
  for (const ir::TileBlocking& b : fewer) EXPECT_LE(b.shared_bytes(4), 8 * 1024) << describe_blocking(b);
}

TEST(GpuSketches, TensorCoreBlockingsAreWholeMmaTilesThatFit) {
  const ir::Target t = gpu(48 * 1024);
  const auto sketches = gpu_mma_sketches(t);
  EXPECT_GE(sketches.size(), 4u);
  for (ir::TileBlocking b : sketches) {
    EXPECT_FALSE(b == t.gpu_mma_tile) << describe_blocking(b, "warp");
    b.mma = ir::NarrowFormat::BF16;
    EXPECT_TRUE(b.valid()) << describe_blocking(b, "warp");
    b.mma = ir::NarrowFormat::TF32;
    EXPECT_TRUE(ir::fits_device(b, t.gpu)) << describe_blocking(b, "warp");
  }
  EXPECT_LT(gpu_mma_sketches(gpu(16 * 1024)).size(), sketches.size());
}

TEST(GpuSketches, BlockingsSurviveTheCachesTextForm) {
  ir::Target t = gpu(48 * 1024);
  t.gpu_tile = {128, 64, 8, 8, 4};
  t.gpu_mma_tile = {64, 128, 32, 32, 64};
  const std::string text = target_fields_text(t);
  EXPECT_NE(text.find("gpu_tile 128 64 8 8 4 gpu_mma 64 128 32 32 64"), std::string::npos) << text;
  const auto back = with_target_fields(gpu(48 * 1024), text);
  ASSERT_TRUE(back.has_value()) << text;
  EXPECT_EQ(back->gpu_tile, t.gpu_tile);
  EXPECT_EQ(back->gpu_mma_tile, t.gpu_mma_tile);
  // A CPU target's text has neither; a blocking that is not whole is refused.
  EXPECT_EQ(target_fields_text(ir::cpu_target(64)).find("gpu_"), std::string::npos);
  EXPECT_FALSE(with_target_fields(t, "12 2 384 512 3072 4096 2 0 gpu_tile 64 48 16 4 5").has_value());
  EXPECT_FALSE(with_target_fields(t, "12 2 384 512 3072 4096 2 0 gpu_mma 128 128 32 64 8").has_value());
  EXPECT_FALSE(with_target_fields(t, "12 2 384 512 3072 4096 2 0 gpu_tile 64 64 16 4 4 extra").has_value());
}

// table[?ids[t], c] += dy[t, c] over 300 tokens of 4 channels into 50 rows (an embedding
// gradient), beside an elementwise nest over 512 x 64 cells and the sums of 8 rows of 512 (a
// block reduction only with the licence). Small: every bucket's thread walks every token, and
// the interpreter runs them all.
ir::LoweredRoutine scatter_and_elementwise() {
  using ir::AxisIndex;
  const auto ids = ir::make_node("ids", ir::DType::F32, {300});
  const auto dy = ir::make_node("dy", ir::DType::F32, {300, 4});
  const auto table = ir::make_node("table", ir::DType::F32, {50, 4});
  const auto x = ir::make_node("x", ir::DType::F32, {512, 64});
  const auto y = ir::make_node("y", ir::DType::F32, {512, 64});
  const ir::Symbol t = ir::fresh_symbol(), c = ir::fresh_symbol(), u = ir::fresh_symbol(), d = ir::fresh_symbol();
  const auto it = [](ir::Symbol s) { return AxisIndex::iterator(s); };
  const auto scatter = ir::set_dynamic(table, {AxisIndex::fixed(0), it(c)}, 0, ir::get(ids, {it(t)}), ir::get(dy, {it(t), it(c)}));
  const auto double_it = ir::set(y, {it(u), it(d)}, ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(x, {it(u), it(d)}), ir::get(x, {it(u), it(d)})}));
  const auto sums = ir::make_node("sums", ir::DType::F32, {8});
  const ir::Symbol row = ir::fresh_symbol(), col = ir::fresh_symbol();
  const auto row_sum = ir::set(sums, {it(row)}, ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(sums, {it(row)}), ir::get(x, {it(row), it(col)})}));
  return {"step", ir::seq({ir::for_loop(t, 0, 300, ir::for_loop(c, 0, 4, scatter)),
                           ir::for_loop(row, 0, 8, ir::for_loop(col, 0, 64, row_sum)),
                           ir::for_loop(u, 0, 512, ir::for_loop(d, 0, 64, double_it))}), {}};
}

// The schedule's own options as seeds: each a different plan from the default's and the others',
// labelled by its key, replaying to the routine's results (buckets keep the scatter's bits).
TEST(GpuScheduleOptionSeeds, VaryTheBucketsTheBlockAndTheLicenceWhereThePlanChanges) {
  const ir::Target t = gpu(48 * 1024);
  const ir::LoweredRoutine r = scatter_and_elementwise();
  const schedule::ScheduleTrace defaults = default_trace(r, t);
  const std::vector<Candidate> seeds = gpu_schedule_option_seeds(r, t, defaults);
  std::vector<std::string> labels;
  for (const Candidate& c : seeds) labels.push_back(c.label);
  const auto has_label = [&](const std::string& l) { return std::find(labels.begin(), labels.end(), l) != labels.end(); };
  EXPECT_TRUE(has_label("default gpu_scatter_buckets off")) << ::testing::PrintToString(labels);
  EXPECT_TRUE(has_label("default gpu_schedule_block_size 128")) << ::testing::PrintToString(labels);
  EXPECT_TRUE(has_label("default gpu_schedule_reassociate false")) << ::testing::PrintToString(labels);
  const auto before = schedule::testing::run_interp(r);
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    EXPECT_NE(seeds[k].trace.steps, defaults.steps) << seeds[k].label;
    for (std::size_t m = 0; m < k; ++m) EXPECT_NE(seeds[k].trace.steps, seeds[m].trace.steps) << seeds[k].label;
    const ir::LoweredRoutine replayed = schedule::replay(r, seeds[k].trace);
    EXPECT_EQ(schedule::testing::compare(before, schedule::testing::run_interp(replayed), schedule::testing::Tolerance::Bitwise), "")
        << seeds[k].label;
  }
  // Without a scatter, no bucket seeds; on a CPU target, none at all.
  const ir::LoweredRoutine plain{"plain", std::get<ir::Seq>(r.body->node).stmts[2], {}};
  for (const Candidate& c : gpu_schedule_option_seeds(plain, t, default_trace(plain, t)))
    EXPECT_EQ(c.label.find("buckets"), std::string::npos) << c.label;
  EXPECT_TRUE(gpu_schedule_option_seeds(r, ir::cpu_target(64), default_trace(r, ir::cpu_target(64))).empty());
}

// Split-K's blocks per unit as seeds: a weight gradient of 256 x 512 cells (128 blocks of 32 x 32
// on 132 units) over 1024 tokens is split into 8 chunks by default (4 blocks a unit), into 4 for
// 2 a unit, not at all for 0; 16 a unit asks for more chunks than split-K makes (8), the default's
// plan again, and is dropped.
TEST(GpuScheduleOptionSeeds, VarySplitKsBlocksPerUnitWhereThePlanChanges) {
  using ir::AxisIndex;
  const ir::Target t = gpu(48 * 1024);
  const auto x = ir::make_node("x", ir::DType::F32, {1024, 256}), dy = ir::make_node("dy", ir::DType::F32, {1024, 512});
  const auto dw = ir::make_node("dw", ir::DType::F32, {256, 512});
  const ir::Symbol b = ir::fresh_symbol(), i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto it = [](ir::Symbol s) { return AxisIndex::iterator(s); };
  const auto product = ir::apply(ir::Op::Mul, ir::DType::F32, {ir::get(x, {it(b), it(i)}), ir::get(dy, {it(b), it(j)})});
  const auto acc = ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(dw, {it(i), it(j)}), product});
  const ir::LoweredRoutine r{"weight_grad",
                             ir::for_loop(i, 0, 256, ir::for_loop(j, 0, 512, ir::for_loop(b, 0, 1024, ir::set(dw, {it(i), it(j)}, acc)))),
                             {}};
  const schedule::ScheduleTrace defaults = default_trace(r, t);
  std::map<std::string, std::int64_t> chunks;  // label -> the partials' chunks (0: not split)
  for (const Candidate& c : gpu_schedule_option_seeds(r, t, defaults)) {
    std::int64_t n = 0;
    for (const ir::NodeRef& node : ir::nodes_of(schedule::replay(r, c.trace).body))
      if (node->debug_name() == "dw_partials") n = node->num_elements() / (256 * 512);
    chunks[c.label] = n;
  }
  ASSERT_EQ(chunks.count("default gpu_split_k_blocks_per_unit 0"), 1u) << ::testing::PrintToString(chunks);
  ASSERT_EQ(chunks.count("default gpu_split_k_blocks_per_unit 2"), 1u) << ::testing::PrintToString(chunks);
  EXPECT_EQ(chunks.at("default gpu_split_k_blocks_per_unit 0"), 0);
  EXPECT_EQ(chunks.at("default gpu_split_k_blocks_per_unit 2"), 4);
  EXPECT_EQ(chunks.count("default gpu_split_k_blocks_per_unit 16"), 0u) << ::testing::PrintToString(chunks);
  std::int64_t default_partials = 0;
  for (const ir::NodeRef& node : ir::nodes_of(schedule::replay(r, defaults).body))
    if (node->debug_name() == "dw_partials") default_partials = node->num_elements();
  EXPECT_EQ(default_partials, 8 * 256 * 512);
}

}  // namespace
}  // namespace cannl::tune
