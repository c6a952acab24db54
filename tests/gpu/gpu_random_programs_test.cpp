// The optimizer's random programs (tests/opt/program_generator.h) under the default GPU schedule
// and kernel fission, compiled and run on the GPU backend: bitwise equal to the unscheduled
// program on the reference interpreter. Small blocks (32 threads) and a low parallelism threshold
// make the tiny generated nests use several blocks, guards and many kernels.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "backends/run_util.h"
#include "cannl/ir/lower.h"
#include "cannl/support/config.h"
#include "gpu/gpu_test_util.h"
#include "cannl/opt/optimize.h"
#include "cannl/schedule/fission.h"
#include "cannl/schedule/lower_for_target.h"
#include "opt/program_generator.h"
#include "schedule/random_annotations.h"
#include "schedule/schedule_test_util.h"

namespace cannl {
namespace {

bool has_annotated_loop(const ir::StmtRef& s) {
  if (const auto* f = std::get_if<ir::For>(&s->node)) {
    return f->axis == ir::AxisType::Grid || f->axis == ir::AxisType::Workgroup || has_annotated_loop(f->body);
  }
  if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
    for (const auto& c : q->stmts) {
      if (has_annotated_loop(c)) return true;
    }
  }
  if (const auto* i = std::get_if<ir::If>(&s->node)) return has_annotated_loop(i->body);
  return false;
}

// One batch of `count` programs from `first_seed` concatenated into one routine; whether the
// default schedule gave some nest vector lanes.
bool check_batch(std::uint64_t first_seed, int count, bool fission, const char* vectors = "auto") {
  auto gpu = gpu_test::backend();
  if (!gpu) {
    ADD_FAILURE() << "check_batch without a backend";
    return false;
  }
  test_util::ConfigGuard guard;
  config::set_override("gpu_schedule_min_parallel", "4");
  config::set_override("gpu_schedule_block_size", "32");
  config::set_override("gpu_schedule_reassociate", "false");  // bitwise against the serial program
  config::set_override("schedule_fission", fission ? "true" : "false");
  config::set_override("gpu_schedule_vectors", vectors);
  std::vector<opt::testing::GeneratedProgram> programs;
  for (int k = 0; k < count; ++k) {
    const std::uint64_t seed = first_seed + static_cast<std::uint64_t>(k);
    programs.push_back(opt::testing::generate_program(seed, "g" + std::to_string(seed) + "_"));
  }
  const ir::LoweredRoutine lowered = ir::lower(opt::testing::concatenate(programs).comp, "gpu_batch");
  const ir::LoweredRoutine scheduled = gpu->default_schedule(lowered);
  EXPECT_TRUE(has_annotated_loop(scheduled.body)) << "nothing was parallelized:\n" << ir::print_loop_ir(scheduled);
  const bool lanes = ir::print_loop_ir(scheduled).find("vectorized") != std::string::npos;
  const auto params = ir::nodes_of(lowered.body);
  const schedule::testing::NodeBytes expected = schedule::testing::run_interp(lowered);
  const auto got = test_util::run_on(*gpu, {scheduled, params}, schedule::testing::test_inputs(params));
  for (std::size_t k = 0; k < params.size(); ++k) {
    EXPECT_EQ(got[k], expected.at(params[k]->id)) << params[k]->debug_name() << "\n" << ir::print_loop_ir(scheduled);
  }
  return lanes;
}

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

// CANNL_TEST_GPU_PROGRAM_BATCHES sets the number of batches of a fuzz test for a longer run by
// hand (each test has its own default).
std::uint64_t batches_or(std::uint64_t fallback) { return env_or("CANNL_TEST_GPU_PROGRAM_BATCHES", fallback); }

// CANNL_TEST_GPU_PROGRAM_FIRST_BATCH starts the seeded fuzz tests at that batch, to reproduce a
// failure a long run named ("batch 20") without the batches before it.
std::uint64_t first_batch() { return env_or("CANNL_TEST_GPU_PROGRAM_FIRST_BATCH", 0); }

std::string batch_trace(std::uint64_t batch, std::uint64_t first_seed) {
  return "batch " + std::to_string(batch) + " (seeds from " + std::to_string(first_seed) + ")";
}

TEST(GpuRandomPrograms, DefaultGpuScheduleWithFissionIsBitwiseTheInterpreter) {
  if (!gpu_test::backend()) GTEST_SKIP() << gpu_test::unavailable_reason();
  for (std::uint64_t batch = first_batch(); batch < batches_or(3) && !HasFailure(); ++batch) {
    SCOPED_TRACE(batch_trace(batch, 11000 + 40 * batch));
    check_batch(11000 + 40 * batch, 40, /*fission=*/true);
  }
}

// Every nest that allows it runs 4 lanes a thread (ir::gpu_vector_loop): vectors moved where
// aligned, lanes computed one by one, still the interpreter's bits.
TEST(GpuRandomPrograms, VectorLanesWhereverTheNestAllowsAreBitwiseTheInterpreter) {
  if (!gpu_test::backend()) GTEST_SKIP() << gpu_test::unavailable_reason();
  int with_lanes = 0;  // a batch may happen to have no nest that takes lanes; the run as a whole must
  for (std::uint64_t batch = first_batch(); batch < batches_or(2) && !HasFailure(); ++batch) {
    SCOPED_TRACE(batch_trace(batch, 13000 + 40 * batch));
    with_lanes += check_batch(13000 + 40 * batch, 40, /*fission=*/true, "on") ? 1 : 0;
  }
  EXPECT_GT(with_lanes, 0) << "no batch had a nest with vector lanes";
}

TEST(GpuRandomPrograms, OneKernelPerStatementWithoutFissionMerging) {
  if (!gpu_test::backend()) GTEST_SKIP() << gpu_test::unavailable_reason();
  check_batch(12000, 40, /*fission=*/false);
}

// Hand-made schedules (tests/schedule/random_annotations.h: Grid and Workgroup loops anywhere
// apply accepts them, fused epilogues, Grid x Grid splits, bucketed scatters, reshaping) compiled for the
// GPU and run: the final lowering round's barriers and first-thread statements, and fission's
// kernels, must give the interpreter's bits on a device that runs a block's threads at once.
//   CANNL_TEST_GPU_PROGRAM_BATCHES=100 ./test_gpu --gtest_filter='GpuRandomPrograms.HandMade*'   (default 4)
// (CANNL_TEST_GPU_BACKEND=cuda-cpu runs the CUDA text of them on the CPU, in either thread order;
// CANNL_TEST_GPU_PROGRAM_SEED=N draws other annotations, 0 by default; CANNL_TEST_GPU_PROGRAM_STEPS
// the annotations tried per batch of 30 programs, 90 by default.)
TEST(GpuRandomPrograms, HandMadeAnnotationsAreBitwiseTheInterpreter) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  std::mt19937_64 rng(17 + env_or("CANNL_TEST_GPU_PROGRAM_SEED", 0));
  schedule::testing::AnnotationCounts counts;
  int ordered_blocks = 0;  // kernels with barriers inside a block, as the backend's target lowers them
  const std::uint64_t batches = batches_or(4);
  const int steps = static_cast<int>(env_or("CANNL_TEST_GPU_PROGRAM_STEPS", 90));
  for (std::uint64_t batch = 0; batch < batches && !HasFailure(); ++batch) {
    SCOPED_TRACE(batch_trace(batch, 14000 + 30 * batch));  // no first batch: the rng runs through them all
    std::vector<opt::testing::GeneratedProgram> programs;
    for (std::uint64_t k = 0; k < 30; ++k) {
      const std::uint64_t seed = 14000 + 30 * batch + k;
      programs.push_back(opt::testing::generate_program(seed, "g" + std::to_string(seed) + "_"));
    }
    const ir::LoweredRoutine lowered = ir::lower(opt::testing::concatenate(programs).comp, "hand_made");
    const ir::LoweredRoutine original =
        batch % 2 == 0 ? opt::optimize(lowered, opt::PassContext::from_config("hand_made"), true).routine : lowered;
    const ir::LoweredRoutine scheduled = schedule::testing::annotate_at_random(original, rng, steps, counts);
    const ir::Target& target = gpu->target();
    for (const schedule::Segment& k : schedule::fission(schedule::lower_for_target(scheduled, target), target))
      ordered_blocks += k.kind == schedule::Segment::Kind::Kernel && schedule::testing::has_nested_barrier(k.body) ? 1 : 0;
    const auto params = ir::nodes_of(original.body);
    const schedule::testing::NodeBytes expected = schedule::testing::run_interp(original);
    std::vector<std::vector<std::byte>> got;
    try {
      got = test_util::run_on(*gpu, {scheduled, params}, schedule::testing::test_inputs(params));
    } catch (const std::exception& e) {  // a device's own check (cuda-cpu: a barrier some threads skip)
      FAIL() << batch_trace(batch, 14000 + 30 * batch) << ": " << e.what() << "\n" << ir::print_loop_ir(scheduled);
    }
    for (std::size_t k = 0; k < params.size(); ++k)
      EXPECT_EQ(got[k], expected.at(params[k]->id)) << params[k]->debug_name() << "\n" << ir::print_loop_ir(scheduled);
  }
  std::printf("%d transforms accepted (%d fused epilogues, %d bucketed scatters, %d reshaping, %d WorkgroupReduce), %d "
              "kernels with barriers inside a block\n",
              counts.accepted, counts.fused, counts.bucketed, counts.reshaped, counts.reductions, ordered_blocks);
  EXPECT_GT(ordered_blocks, 0);
}

}  // namespace
}  // namespace cannl
