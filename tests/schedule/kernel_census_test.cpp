// The kernel census: a routine's kernels ranked by their static load on a device shaped like an
// H200 (132 multiprocessors, sm_90's launch limits), and the kernels that starve it.
#include "cannl/schedule/kernel_census.h"

#include <gtest/gtest.h>

#include "schedule/gpu_test_util.h"

namespace cannl::schedule {
namespace {

using testing::cuda_limits;
using testing::gpu_test_target;

constexpr std::int64_t kH200Multiprocessors = 132;

ir::Target h200_like_target() {
  ir::GpuLimits limits = cuda_limits();
  limits.compute_units = kH200Multiprocessors;
  return gpu_test_target(limits);
}

// The census of a kernel that starves the device names it, with its share of the device.
TEST(KernelCensus, SummaryRanksTheHeaviestAndNamesTheStarving) {
  const ir::NodeRef c = ir::make_node("c", ir::DType::F32, {256, 256});
  const ir::Symbol b = ir::fresh_symbol(), t = ir::fresh_symbol(), k = ir::fresh_symbol(), s = ir::fresh_symbol();
  const ir::AxisIndex row = ir::AxisIndex::iterator(b), col = ir::AxisIndex::iterator(t);
  // k1: one block of 64 threads over 5000 steps; k0: 256 x 256 threads over 10 steps.
  const ir::StmtRef wide = ir::for_loop(
      b, 0, 256,
      ir::for_loop(t, 0, 256, ir::for_loop(k, 0, 10, ir::set(c, {row, col}, ir::constant(1, ir::DType::F32))),
                   ir::AxisType::Workgroup),
      ir::AxisType::Grid);
  const ir::StmtRef narrow = ir::for_loop(
      t, 0, 64, ir::for_loop(s, 0, 5000, ir::set(c, {ir::AxisIndex::fixed(0), col}, ir::constant(2, ir::DType::F32))),
      ir::AxisType::Workgroup);
  std::vector<Segment> segments(3);
  segments[0] = {.kind = Segment::Kind::Kernel, .body = wide, .geometry = ir::kernel_geometry(wide)};
  segments[1] = {.kind = Segment::Kind::Zero, .zeroed = c};
  segments[2] = {.kind = Segment::Kind::Kernel, .body = narrow, .geometry = ir::kernel_geometry(narrow)};
  const std::vector<KernelCensusRow> census = kernel_census(segments, h200_like_target().gpu);
  ASSERT_EQ(census.size(), 2u);
  EXPECT_EQ(census[1].kernel, 1u);
  ASSERT_EQ(starving_kernels(census).size(), 1u);
  const std::string summary = kernel_census_summary(census, "step", 1);
  EXPECT_NE(summary.find("step: 2 kernels, 5010 critical steps on 270336 resident threads; the heaviest:\n"
                         "  k1  1 x 64 threads (0.0237% of the device), 5000 steps per thread, 99.8% of the steps: c\n"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("kernels that starve the device"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("  k0 "), std::string::npos) << summary;
}

}  // namespace
}  // namespace cannl::schedule
