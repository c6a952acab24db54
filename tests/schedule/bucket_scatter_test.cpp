// BucketScatter and its use by the default GPU schedule: an embedding gradient run once per
// bucket of target rows computes the serial scatter's bits (repeated rows, rows at bucket edges,
// rows outside the table, row counts the buckets do not divide); the legality oracle proves the
// buckets disjoint from the guard, and nothing weaker; the transform refuses nests that running
// once per bucket would change; the default GPU schedule puts the bucket loop on the Grid of a
// long scatter, the trace replays it, and its kernels run as a GPU may.
#include <gtest/gtest.h>

#include <random>

#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/fission.h"
#include "cannl/schedule/legality.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/schedule/trace.h"
#include "cannl/support/config.h"
#include "backends/run_util.h"
#include "schedule/gpu_test_util.h"
#include "schedule/row_bucket.h"
#include "schedule/scatter_test_util.h"

namespace cannl::schedule::testing {
namespace {

using ir::AxisIndex;
using ir::AxisType;
using ir::DType;

ir::LoweredRoutine order_sensitive(const EmbeddingGradient& g) { return g.order_sensitive_routine(); }

ir::LoweredRoutine bucketed(const ir::LoweredRoutine& r, const EmbeddingGradient& g, std::int64_t buckets,
                            AxisType type = AxisType::Grid) {
  return apply(r, bucket_scatter(g.c, buckets, type));
}

TEST(BucketScatter, EveryUpdateRunsOnceInItsBucketInTokenOrder) {
  for (const int axis : {0, 1}) {
    const EmbeddingGradient g(20, 2, 70, axis);
    const ir::LoweredRoutine r = order_sensitive(g);
    const NodeBytes serial = run_interp(r);
    // 3 buckets of 7 rows (the last holds 6), 6 of 4 (the last holds none), one row each, one.
    for (const std::int64_t buckets : {3, 6, 20, 1}) {
      const BucketScatter b = bucket_scatter(g.c, buckets, AxisType::Grid);
      const ir::LoweredRoutine s = apply(r, b);
      EXPECT_EQ(compare(serial, run_interp(s), Tolerance::Bitwise), "") << ir::print_loop_ir(s);
      EXPECT_EQ(parallel_legality(s, b.bucket).legality, Legality::Legal) << ir::print_loop_ir(s);
      EXPECT_EQ(parallel_legality(s, g.c).legality, Legality::Legal);
      EXPECT_NE(parallel_legality(s, g.t).legality, Legality::Legal);  // the rows still repeat
      validate_parallel(s);
    }
  }
}

// Small random embedding gradients, bucketed at random: each the serial scatter's bits.
TEST(BucketScatter, RandomShapesAndBucketCountsKeepTheBits) {
  std::mt19937 rng(5);
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int n = 0; n < 20 && !HasFailure(); ++n) {
    const EmbeddingGradient g(pick(1, 20), pick(1, 3), pick(1, 60), pick(0, 1));
    const ir::LoweredRoutine r = order_sensitive(g);
    const std::int64_t buckets = pick(1, static_cast<int>(g.rows));
    const ir::LoweredRoutine s = bucketed(r, g, buckets);
    EXPECT_EQ(compare(run_interp(r), run_interp(s), Tolerance::Bitwise), "") << buckets << " buckets\n" << ir::print_loop_ir(s);
  }
}

// The transform prints, parses and replays like the others.
TEST(BucketScatter, TraceRoundTrip) {
  const EmbeddingGradient g(50, 3, 300);
  const ir::LoweredRoutine r = g.routine();
  const std::vector<Transform> steps = {bucket_scatter(g.c, 7, AxisType::Grid)};
  const ScheduleTrace trace = record(r, steps);
  EXPECT_TRUE(has(print_trace(trace), "bucket_scatter i1 7 grid")) << print_trace(trace);
  EXPECT_EQ(ir::print_loop_ir(replay(r, parse_trace(print_trace(trace)))), ir::print_loop_ir(apply(r, steps)));
}

TEST(BucketScatter, RefusesNestsThatRunningOncePerBucketWouldChange) {
  const EmbeddingGradient g(50, 3, 300);
  const auto update = [&](ir::ScalarRef value) {
    return ir::set_dynamic(g.table, {AxisIndex::fixed(0), it(g.c)}, 0, ir::get(g.ids, {it(g.t)}), std::move(value));
  };
  const auto nest = [&](ir::StmtRef leaf, AxisType inner = AxisType::Serial) {
    return ir::LoweredRoutine{"nest", ir::for_loop(g.c, 0, g.channels, ir::for_loop(g.t, 0, g.tokens, std::move(leaf), inner)), {}};
  };
  const auto dy = ir::get(g.dy, {it(g.t), it(g.c)});
  // Another store would run once per bucket.
  const auto other = ir::make_node("other", DType::F32, {300, 3});
  const auto twice = nest(ir::seq({update(dy), ir::set(other, {it(g.t), it(g.c)}, dy)}));
  expect_schedule_error([&] { apply(twice, bucket_scatter(g.c, 4)); }, {"other than loops, guards and scatters"});
  // A value reading the table would see the buckets' order of updates.
  const auto reads = nest(update(ir::get(g.table, {AxisIndex::fixed(2), it(g.c)})));
  expect_schedule_error([&] { apply(reads, bucket_scatter(g.c, 4)); }, {"table", "read by the nest"});
  // A bucket per row at most; at least one.
  expect_schedule_error([&] { apply(nest(update(dy)), bucket_scatter(g.c, 51)); }, {"must be in [1, 50]"});
  expect_schedule_error([&] { apply(nest(update(dy)), bucket_scatter(g.c, 0)); }, {"must be in [1, 50]"});
  // Annotated loops inside: bucket first.
  expect_schedule_error([&] { apply(nest(update(dy), AxisType::Unrolled), bucket_scatter(g.c, 4)); },
                        {"bucket the nest before annotating"});
  // No scatter at all.
  Elementwise e(4, 8);
  expect_schedule_error([&] { apply(e.routine(), bucket_scatter(e.i, 2)); }, {"holds no scatter"});
}

// The guard proves the buckets' rows disjoint; guards that do not (overlapping buckets, a bound
// on another row than the scatter's, statements between the guard and the scatter) prove
// nothing, and a scatter racing on its other axes still races inside each bucket.
// Applied a second time, the transform nested a bucket loop binding the symbol of the first:
// schedule::apply accepted it and the verifier then failed with an InternalError ("loop rebinds
// symbol"); the minted symbol is now checked to be free.
TEST(BucketScatter, ApplyingTheSameTransformTwiceIsAScheduleError) {
  const EmbeddingGradient g(20, 2, 70);
  const BucketScatter b = bucket_scatter(g.c, 3);
  const ir::LoweredRoutine once = apply(order_sensitive(g), b);
  expect_schedule_error([&] { apply(once, b); },
                        {"bucket_scatter i4 into 3", "takes the symbol of loop i3, already in the routine", ">> for i3",
                         "freshly minted symbols"});
}

TEST(BucketScatterLegality, OnlyAGuardOfTheScattersOwnRowSeparatesTheBuckets) {
  const EmbeddingGradient g(50, 3, 300);
  const ir::Symbol b = ir::fresh_symbol();
  const auto row = ir::get(g.ids, {it(g.t)});
  const auto scatter = [&](AxisIndex cell) {
    return ir::set_dynamic(g.table, {AxisIndex::fixed(0), std::move(cell)}, 0, row, ir::get(g.dy, {it(g.t), it(g.c)}));
  };
  const auto routine = [&](ir::StmtRef leaf) {
    return ir::LoweredRoutine{"guarded", ir::for_loop(b, 0, 8, ir::for_loop(g.c, 0, 3, ir::for_loop(g.t, 0, 300, std::move(leaf)))), {}};
  };
  const AxisIndex first{{{7, b}}, 0};
  const auto right = routine(ir::if_then(detail::row_bucket_guard(row, first, 7), scatter(it(g.c))));
  EXPECT_EQ(parallel_legality(right, b).legality, Legality::Legal);
  EXPECT_EQ(parallel_legality(right, g.c).legality, Legality::Legal);
  // Buckets of 8 rows every 7: neighbours share a row.
  const auto overlapping = routine(ir::if_then(detail::row_bucket_guard(row, first, 8), scatter(it(g.c))));
  EXPECT_NE(parallel_legality(overlapping, b).legality, Legality::Legal);
  // The guard bounds ids[t + 1] (another token's id), not the scatter's row.
  const auto next = ir::get(g.ids, {AxisIndex{{{1, g.t}}, 1}});
  const auto other_row = routine(ir::if_then(detail::row_bucket_guard(next, first, 7), scatter(it(g.c))));
  EXPECT_NE(parallel_legality(other_row, b).legality, Legality::Legal);
  // A store to ids between the guard and the scatter may change the row the guard tested.
  const auto store = ir::set(g.ids, {it(g.t)}, ir::constant(3, DType::F32));
  const auto changed = routine(ir::if_then(detail::row_bucket_guard(row, first, 7), ir::seq({store, scatter(it(g.c))})));
  EXPECT_NE(parallel_legality(changed, b).legality, Legality::Legal);
  // table[?, 0] from every channel: the buckets are disjoint, the channels are not.
  const auto racing = routine(ir::if_then(detail::row_bucket_guard(row, first, 7), scatter(AxisIndex::fixed(0))));
  EXPECT_EQ(parallel_legality(racing, b).legality, Legality::Legal);
  EXPECT_NE(parallel_legality(racing, g.c).legality, Legality::Legal);
  // Split, the bucket loop's parts are each proven too (the guard's bounds move together).
  const Split s = split(b, 3, AxisType::Grid, AxisType::Workgroup);
  const ir::LoweredRoutine parts = apply(right, s);
  EXPECT_EQ(parallel_legality(parts, s.outer).legality, Legality::Legal);
  EXPECT_EQ(parallel_legality(parts, s.inner).legality, Legality::Legal);
}

// ---- the default GPU schedule ----

ir::GpuLimits limits_with_units(std::int64_t units) {
  ir::GpuLimits l = cuda_limits();
  l.compute_units = units;
  return l;
}

GpuScheduleOptions options(std::int64_t units, std::int64_t buckets = GpuScheduleOptions::kAutoScatterBuckets) {
  return {.target = gpu_test_target(limits_with_units(units)), .tiles = false, .scatter_buckets = buckets};
}

std::vector<std::int64_t> kernel_threads(const ir::LoweredRoutine& s, const ir::Target& target) {
  std::vector<std::int64_t> threads;
  for (const Segment& k : fission(lower_for_target(s, target), target))
    if (k.kind == Segment::Kind::Kernel) threads.push_back(k.geometry.threads_per_block() * k.geometry.blocks());
  return threads;
}

// The schedule's text.
std::string plan_text(const ir::LoweredRoutine& r, const GpuScheduleOptions& o) {
  return ir::print_loop_ir(plan_default_gpu_schedule(r, o).routine);
}

// The schedule keeps the bits on the interpreter and as a GPU may run its kernels, replays from
// its trace, and passes validate_parallel; returns its text.
std::string scheduled(const ir::LoweredRoutine& r, const GpuScheduleOptions& o) {
  const ScheduledRoutine plan = plan_default_gpu_schedule(r, o);
  const ScheduleTrace trace = parse_trace(print_trace(record(r, plan.transforms)));
  EXPECT_EQ(ir::print_loop_ir(replay(r, trace)), ir::print_loop_ir(plan.routine)) << print_trace(trace);
  const NodeBytes serial = run_interp(r);
  EXPECT_EQ(compare(serial, run_interp(plan.routine), Tolerance::Bitwise), "") << ir::print_loop_ir(plan.routine);
  const std::vector<Segment> segments = fission(lower_for_target(plan.routine, o.target), o.target);
  EXPECT_EQ(compare(serial, run_segments(plan.routine, segments, Order::BlocksReversed), Tolerance::Bitwise), "")
      << ir::print_loop_ir(plan.routine);
  validate_parallel(plan.routine);
  return ir::print_loop_ir(plan.routine);
}

TEST(BucketScatterSchedule, ALongScatterGetsItsBucketLoopOnTheGrid) {
  const EmbeddingGradient g(8, 2, 260);
  const ir::LoweredRoutine r = order_sensitive(g);
  // Without buckets: 2 channels are too few threads, one thread walks all 520 updates.
  const std::string serial_rows = plan_text(r, options(1, 0));
  EXPECT_TRUE(has(serial_rows, "for i5 in [0, 2):\n  for i6 in [0, 260):\n    table[?ids[i6], i5] add=")) << serial_rows;
  // One compute unit: about 1024 threads would be 512 buckets of 2 channels, one per row at
  // most: 8 buckets, sharing the block with the channels.
  const std::string text = scheduled(r, options(1));
  EXPECT_TRUE(has(text, "for i5 in [0, 8) workgroup:\n  for i6 in [0, 2) workgroup:\n    for i7 in [0, 260):\n"
                        "      if and:f64(lt:f64(index(i5 - 1), ids[i7]), lt:f64(ids[i7], index(i5 + 1))):\n"
                        "        table[?ids[i7], i6] add=")) << text;
  // A count from the config: 6 asked, 4 buckets of 2 rows made (none empty).
  const std::string four = plan_text(r, options(1, 6));
  EXPECT_TRUE(has(four, "for i5 in [0, 4) workgroup:")) << four;
  EXPECT_TRUE(has(four, "if and:f64(lt:f64(index(2*i5 - 1), ids[i7]), lt:f64(ids[i7], index(2*i5 + 2))):")) << four;
  // A device that does not say how many units it has: no buckets on auto.
  EXPECT_EQ(plan_text(r, options(0)), serial_rows);
}

// Many channels: the buckets on the Grid above the channels' blocks.
TEST(BucketScatterSchedule, ManyChannelsKeepTheirBlocksUnderTheBucketGrid) {
  const EmbeddingGradient g(8, 300, 256, /*row_axis=*/1);
  const auto update = ir::set_dynamic(g.table, {it(g.c), AxisIndex::fixed(0)}, 1, ir::get(g.ids, {it(g.t)}),
                                      ir::get(g.dy, {it(g.t), it(g.c)}));
  const ir::LoweredRoutine r{"wide", ir::seq({g.make_ids(), ir::for_loop(g.c, 0, 300, ir::for_loop(g.t, 0, 256, update))}), {}};
  const ScheduledRoutine plan = plan_default_gpu_schedule(r, options(2));
  const std::string text = ir::print_loop_ir(plan.routine);
  // 2 units: 2048 threads, 7 buckets of 300 channels asked, 4 made (2 rows each).
  EXPECT_TRUE(has(text, "for i1 in [0, 4) grid:\n  for i2 in [0, 2) grid:\n    for i3 in [0, 256) workgroup:")) << text;
  EXPECT_EQ(kernel_threads(plan.routine, options(2).target).back(), 4 * 2 * 256);
  validate_parallel(plan.routine);  // the bits: the smaller nests above
}

// GPT-2 124M's embedding gradients (batch 8 x 1024 tokens, 768 channels, the table as
// [channels, rows]) on a device of 132 compute units: about 135168 threads, so 176 buckets of
// wte's 50257 rows (286 each) and 171 of wpe's 1024 (6 each), above the channels' 3 blocks of
// 256; before, 768 threads each walked all 8192 tokens. Planned only (no run).
TEST(BucketScatterSchedule, Gpt2SizedEmbeddingGradientsFillTheDevice) {
  for (const auto& [rows, buckets] : {std::pair<std::int64_t, std::int64_t>{50257, 176}, {1024, 171}}) {
    const EmbeddingGradient g(rows, 768, 8192, /*row_axis=*/1);
    const ir::LoweredRoutine r{"gpt2_grad", g.scatter_nest(), {}};
    const GpuScheduleOptions o = options(132);
    const std::vector<Segment> segments = fission(lower_for_target(plan_default_gpu_schedule(r, o).routine, o.target), o.target);
    ASSERT_EQ(segments.size(), 1u);
    EXPECT_EQ(segments[0].geometry.grid, (std::array<std::int64_t, 3>{3, buckets, 1})) << rows << " rows";
    EXPECT_EQ(segments[0].geometry.block, (std::array<std::int64_t, 3>{256, 1, 1}));
    const std::vector<Segment> before = fission(lower_for_target(plan_default_gpu_schedule(r, options(132, 0)).routine, o.target), o.target);
    EXPECT_EQ(before[0].geometry.grid, (std::array<std::int64_t, 3>{3, 1, 1}));
  }
}

TEST(BucketScatterSchedule, ShortScattersAndOtherNestsStayAsTheyWere) {
  // 200 tokens per thread: too short to bucket.
  const EmbeddingGradient g(20, 4, 200);
  const ir::LoweredRoutine r = order_sensitive(g);
  EXPECT_EQ(plan_text(r, options(4)), plan_text(r, options(4, 0)));
  // A nest holding more than the scatter is not bucketed.
  const auto other = ir::make_node("other", DType::F32, {300, 4});
  const EmbeddingGradient h(20, 4, 300);
  const auto update = ir::set_dynamic(h.table, {AxisIndex::fixed(0), it(h.c)}, 0, ir::get(h.ids, {it(h.t)}), ir::get(h.dy, {it(h.t), it(h.c)}));
  const auto copy = ir::set(other, {it(h.t), it(h.c)}, ir::get(h.dy, {it(h.t), it(h.c)}));
  const ir::LoweredRoutine mixed{"mixed", ir::seq({h.make_ids(), ir::for_loop(h.c, 0, 4, ir::for_loop(h.t, 0, 300, ir::seq({update, copy})))}), {}};
  EXPECT_EQ(plan_text(mixed, options(4)), plan_text(mixed, options(4, 0)));
}

// table[?ids[t], 0] += dy[t, c] from every channel would race: without buckets nothing is
// parallel; the buckets alone are proven, and become the threads.
TEST(BucketScatterSchedule, AScatterWithNoOtherParallelLoopRunsItsBucketsInParallel) {
  const EmbeddingGradient g(16, 2, 256);
  const auto update = ir::set_dynamic(g.table, {AxisIndex::fixed(0), AxisIndex::fixed(0)}, 0, ir::get(g.ids, {it(g.t)}),
                                      ir::get(g.dy, {it(g.t), it(g.c)}));
  const ir::LoweredRoutine r{"one_column", ir::seq({g.make_ids(), g.make_dy(), ir::for_loop(g.c, 0, 2, ir::for_loop(g.t, 0, 256, update))}), {}};
  EXPECT_TRUE(has(plan_text(r, options(1, 0)), "for i4 in [0, 2):\n  for i5 in [0, 256):")) << plan_text(r, options(1, 0));
  const std::string text = scheduled(r, options(1));
  EXPECT_TRUE(has(text, "for i4 in [0, 16) workgroup:\n  for i5 in [0, 2):\n    for i6 in [0, 256):")) << text;
}

TEST(BucketScatterSchedule, ConfigKey) {
  test_util::ConfigGuard guard;
  const ir::Target target = gpu_test_target();
  EXPECT_EQ(GpuScheduleOptions::from_config(target).scatter_buckets, GpuScheduleOptions::kAutoScatterBuckets);
  config::set_override("gpu_scatter_buckets", "off");
  EXPECT_EQ(GpuScheduleOptions::from_config(target).scatter_buckets, 0);
  config::set_override("gpu_scatter_buckets", "96");
  EXPECT_EQ(GpuScheduleOptions::from_config(target).scatter_buckets, 96);
  config::set_override("gpu_scatter_buckets", "many");
  try {
    (void)GpuScheduleOptions::from_config(target);
    ADD_FAILURE() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(has(e.what(), "auto, off or a bucket count")) << e.what();
  }
}

}  // namespace
}  // namespace cannl::schedule::testing
