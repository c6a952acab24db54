// The GPU pipeline of the schedule layer on the optimizer's random programs
// (tests/opt/program_generator.h): default GPU schedule (or random hardware annotations that
// apply accepts), the final lowering round for a GPU target, kernel fission. Running the
// segments in launch order on the interpreter, and as a GPU may run them (gpu_test_util.h),
// must give the bits of the unscheduled routine, and every kernel must launch within the
// device's limits with every write under loops of every active hardware slot (fission asserts
// that).
//
//   CANNL_TEST_SCHEDULE_PROGRAMS=5000 ./test_schedule --gtest_filter='GpuRandomPrograms.*'   (default 300)
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "cannl/ir/lower.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/opt/optimize.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/schedule/trace.h"
#include "cannl/schedule/transforms.h"
#include "opt/program_generator.h"
#include "schedule/gpu_test_util.h"
#include "schedule/loop_tree.h"
#include "cannl/ir/block_reduction.h"
#include "schedule/random_annotations.h"

namespace cannl::schedule::testing {
namespace {

std::int64_t env_count(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoll(v, nullptr, 10) : fallback;
}

// The launches, for a failure's message: each kernel's geometry and body, each memset's node.
std::string launches_text(const std::vector<Segment>& segments) {
  std::string out;
  for (const Segment& g : segments) {
    if (g.kind == Segment::Kind::Zero) {
      out += "zero " + g.zeroed->debug_name() + "\n";
      continue;
    }
    out += "kernel: grid " + std::to_string(g.geometry.blocks()) + " block " +
           std::to_string(g.geometry.threads_per_block()) + "\n" + ir::print_stmt(g.body);
  }
  return out;
}

bool within(const ir::KernelGeometry& g, const ir::GpuLimits& limits) {
  if (g.threads_per_block() > limits.max_threads_per_block) return false;
  for (std::size_t d = 0; d < 3; ++d)
    if (g.block[d] > limits.max_block_dims[d] || g.grid[d] > limits.max_grid_dims[d]) return false;
  return true;
}

// What the test saw, so it can check it exercised the interesting cases.
struct Census {
  int programs = 0, parallel_kernels = 0, merged = 0, with_barrier = 0, zero = 0;
};

// Schedules, lowers and fissions `r` for a GPU with blocks of `block_size` threads; checks the
// segments' bits and launches.
void check_program(const ir::LoweredRoutine& r, std::int64_t block_size, ir::GpuLimits limits, Census& census,
                   const std::string& what) {
  const ir::Target target = gpu_test_target(limits);
  const ir::LoweredRoutine low = lower_for_target(default_gpu_schedule(r, {target, block_size, 4}), target);
  const std::vector<Segment> segments = fission(low, target);
  const NodeBytes expected = run_interp(r);
  for (const Order order : {Order::Interpreter, Order::BlocksForward, Order::BlocksReversed})
    EXPECT_EQ(compare(expected, run_segments(r, segments, order), Tolerance::Bitwise), "")
        << what << " order " << static_cast<int>(order) << "\n" << ir::print_loop_ir(r) << "\nscheduled\n"
        << ir::print_loop_ir(low);
  for (const Segment& s : segments) {
    census.zero += s.kind == Segment::Kind::Zero ? 1 : 0;
    if (s.kind != Segment::Kind::Kernel) continue;
    EXPECT_EQ(s.geometry, ir::kernel_geometry(s.body)) << what;
    EXPECT_TRUE(within(s.geometry, limits)) << what << "\n" << ir::print_stmt(s.body);
    census.parallel_kernels += s.geometry.serial() ? 0 : 1;
  }
  const MergeCounts merged = merge_counts(segments);
  census.merged += merged.merged;
  census.with_barrier += merged.with_barrier;
  ++census.programs;
}

// Block sizes that split the generated programs' short loops (guards, two thread dimensions)
// and one that takes them whole; small launch limits so the slot limits bite too.
constexpr std::int64_t kBlockSizes[] = {2, 3, 4, 8, 32, 256};
ir::GpuLimits small_limits() { return {64, {64, 64, 4}, {1 << 20, 3, 3}, 1024, 32}; }

TEST(GpuRandomPrograms, ScheduledSegmentsAreBitwiseOnTheInterpreter) {
  const std::int64_t n = env_count("CANNL_TEST_SCHEDULE_PROGRAMS", 300);
  Census census;
  for (std::int64_t seed = 0; seed < n && !HasFailure(); ++seed) {
    const auto p = opt::testing::generate_program(static_cast<std::uint64_t>(11000 + seed));
    const ir::LoweredRoutine lowered = ir::lower(p.comp, "generated");
    const ir::LoweredRoutine r =
        seed % 2 == 0 ? opt::optimize(lowered, opt::PassContext::from_config("generated"), true).routine : lowered;
    const std::int64_t block = kBlockSizes[seed % std::size(kBlockSizes)];
    check_program(r, block, seed % 3 == 0 ? small_limits() : cuda_limits(), census,
                  "seed " + std::to_string(11000 + seed) + " block " + std::to_string(block));
  }
  std::printf("%d programs: %d parallel kernels, %d merged, %d with a barrier, %d zero segments\n", census.programs,
              census.parallel_kernels, census.merged, census.with_barrier, census.zero);
  EXPECT_GT(census.parallel_kernels, n / 2);
  EXPECT_GT(census.with_barrier, 0);
  EXPECT_GT(census.zero, 0);
}

// With the re-association licence (and a low threshold, so the small generated reductions
// qualify) accumulations into few cells are staged into partials: the segments, as a GPU may run
// them, compute the bits of the scheduled routine, and those are the unscheduled routine's
// within the re-association tolerance.
TEST(GpuRandomPrograms, StagedPartialsRunAsTheScheduledRoutine) {
  const std::int64_t n = env_count("CANNL_TEST_SCHEDULE_PROGRAMS", 300) / 2;
  int staged = 0;
  for (std::int64_t seed = 0; seed < n && !HasFailure(); ++seed) {
    const auto p = opt::testing::generate_program(static_cast<std::uint64_t>(13000 + seed));
    const ir::LoweredRoutine r = ir::lower(p.comp, "generated");
    const ir::Target target = gpu_test_target(cuda_limits());
    const ir::LoweredRoutine s = default_gpu_schedule(r, {target, kBlockSizes[seed % std::size(kBlockSizes)], 1, true});
    const ir::LoweredRoutine low = lower_for_target(s, target);
    const std::vector<Segment> segments = fission(low, target);
    const std::string what = "seed " + std::to_string(13000 + seed) + "\n" + ir::print_loop_ir(r) + "\nscheduled\n" +
                             ir::print_loop_ir(low);
    const NodeBytes scheduled = run_interp(s);
    EXPECT_EQ(compare(run_interp(r), scheduled, Tolerance::Reassociated), "") << what;
    for (const Order order : {Order::Interpreter, Order::BlocksForward, Order::BlocksReversed})
      EXPECT_EQ(compare(scheduled, run_segments(s, segments, order), Tolerance::Bitwise), "") << what;
    staged += ir::print_loop_ir(s).find("_partials") != std::string::npos ? 1 : 0;
  }
  std::printf("%d of %lld programs staged partials\n", staged, static_cast<long long>(n));
  EXPECT_GT(staged, 0);
}

// The default schedule's transforms, recorded and replayed, make its routine (the tuner measures
// and caches the default GPU schedule as a trace), with and without staged partials.
TEST(GpuRandomPrograms, DefaultScheduleRecordsAndReplays) {
  const std::int64_t n = env_count("CANNL_TEST_SCHEDULE_PROGRAMS", 300) / 2;
  const ir::Target target = gpu_test_target(cuda_limits());
  for (std::int64_t seed = 0; seed < n && !HasFailure(); ++seed) {
    const ir::LoweredRoutine r = ir::lower(opt::testing::generate_program(static_cast<std::uint64_t>(14000 + seed)).comp, "generated");
    const GpuScheduleOptions o{target, kBlockSizes[seed % std::size(kBlockSizes)], 1, seed % 2 == 0};
    const ScheduledRoutine plan = plan_default_gpu_schedule(r, o);
    const ScheduleTrace trace = parse_trace(print_trace(record(r, plan.transforms)));
    EXPECT_EQ(ir::print_loop_ir(replay(r, trace)), ir::print_loop_ir(plan.routine))
        << "seed " << 14000 + seed << "\n" << print_trace(trace);
  }
}

// Programs concatenated into one routine: many independent and dependent nests side by side,
// so fission merges (and must not merge) across programs.
TEST(GpuRandomPrograms, ConcatenatedProgramsMergeOnlyAlignedNests) {
  Census census;
  for (std::uint64_t batch = 0; batch < 6 && !HasFailure(); ++batch) {
    std::vector<opt::testing::GeneratedProgram> programs;
    for (std::uint64_t k = 0; k < 8; ++k)
      programs.push_back(opt::testing::generate_program(12000 + batch * 8 + k, "p" + std::to_string(k) + "_"));
    const ir::LoweredRoutine r = ir::lower(opt::testing::concatenate(programs).comp, "batch");
    check_program(r, kBlockSizes[batch % std::size(kBlockSizes)], cuda_limits(), census, "batch " + std::to_string(batch));
  }
  std::printf("%d batches: %d parallel kernels, %d merged, %d with a barrier\n", census.programs,
              census.parallel_kernels, census.merged, census.with_barrier);
  EXPECT_GT(census.merged, 0);
}

// Hand-made schedules (random_annotations.h). The final round and fission must turn every
// accepted one into launches that compute the interpreter's bits, with no race between blocks or
// threads (cannl/interp/race_check.h), raising no InternalError.
//   CANNL_TEST_SCHEDULE_PROGRAMS=60000 CANNL_TEST_SCHEDULE_SEED=3 ./test_schedule --gtest_filter='*AcceptedHardware*'
// (the seed picks other programs and other annotations, 0 by default; CANNL_TEST_SCHEDULE_STEPS
// how many annotations each program is tried with, 6 by default)
TEST(GpuRandomPrograms, AcceptedHardwareAnnotationsRunAsOnTheInterpreter) {
  const std::int64_t n = env_count("CANNL_TEST_SCHEDULE_PROGRAMS", 300);
  const std::int64_t shift = env_count("CANNL_TEST_SCHEDULE_SEED", 0);
  const std::int64_t steps = env_count("CANNL_TEST_SCHEDULE_STEPS", 6);  // annotations tried per program
  std::mt19937_64 rng(static_cast<std::uint64_t>(5 + shift));
  AnnotationCounts counts;
  int parallel_kernels = 0, with_scatter = 0, ordered_blocks = 0, trees = 0;
  for (std::int64_t seed = 0; seed < n && !HasFailure(); ++seed) {
    const std::uint64_t program = static_cast<std::uint64_t>(20000 + 1000003 * shift + seed);
    const ir::LoweredRoutine lowered = ir::lower(opt::testing::generate_program(program).comp, "generated");
    const ir::LoweredRoutine original =
        seed % 2 == 0 ? opt::optimize(lowered, opt::PassContext::from_config("generated"), true).routine : lowered;
    with_scatter += has_scatter(original.body) ? 1 : 0;
    const ir::LoweredRoutine r = annotate_at_random(original, rng, static_cast<int>(steps), counts);
    const ir::Target target = gpu_test_target();
    const ir::LoweredRoutine low = lower_for_target(r, target);
    const std::vector<Segment> segments = fission(low, target);
    for (const Segment& g : segments) {
      parallel_kernels += g.kind == Segment::Kind::Kernel && !g.geometry.serial() ? 1 : 0;
      ordered_blocks += g.kind == Segment::Kind::Kernel && has_nested_barrier(g.body) ? 1 : 0;
      if (g.kind == Segment::Kind::Kernel)
        ir::for_each_stmt(g.body, [&](const ir::Stmt& x) {  // in the tree form: watched as rendered
          const auto* f = std::get_if<ir::For>(&x.node);
          trees += f && f->axis == ir::AxisType::WorkgroupReduce && ir::block_reduction(*f) ? 1 : 0;
        });
    }
    const NodeBytes expected = run_interp(original);
    for (const Order order : {Order::Interpreter, Order::BlocksForward, Order::BlocksReversed})
      EXPECT_EQ(compare(expected, run_segments(r, segments, order), Tolerance::Bitwise), "")
          << "seed " << program << " order " << static_cast<int>(order) << "\nthe program:\n" << ir::print_loop_ir(original)
          << "scheduled:\n" << ir::print_loop_ir(r) << "lowered:\n" << ir::print_loop_ir(low) << "launches:\n"
          << launches_text(segments);
  }
  std::printf("%d transforms accepted (%d bucketed scatters, in %d programs with a scatter; %d fused epilogues; %d "
              "reshaping; %d WorkgroupReduce, %d block reductions in the tree form), %d parallel kernels, %d with "
              "barriers inside a block\n",
              counts.accepted, counts.bucketed, with_scatter, counts.fused, counts.reshaped, counts.reductions, trees,
              parallel_kernels, ordered_blocks);
  EXPECT_GT(parallel_kernels, n / 2);
  EXPECT_GT(counts.bucketed, 0);
  EXPECT_GT(trees, 0);  // the race checker's model of a rendered tree takes part
  EXPECT_GT(ordered_blocks, 0);
}

}  // namespace
}  // namespace cannl::schedule::testing
