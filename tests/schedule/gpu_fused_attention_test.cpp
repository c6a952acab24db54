// Fused attention's loop code (nn::fused_attention: the online-softmax forward, then the delta,
// dq and dk/dv nests) under the default GPU schedule with fission: its row loops become threads
// over several blocks, and the kernels run as a GPU may (blocks in either order, a block's
// threads phase by phase) compute the interpreter's bits, so no nest needs a grid-wide barrier:
// each thread writes only its own query (or key) rows.
#include <gtest/gtest.h>

#include "cannl/ir/lower.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/lower_for_target.h"
#include "nn/attention_test_util.h"
#include "schedule/gpu_test_util.h"

namespace cannl::schedule::testing {
namespace {

TEST(DefaultGpuSchedule, FusedAttentionRunsAsOnAGpu) {
  for (const bool causal : {true, false}) {
    reset_tensor_state();
    const auto g = testing_util::attention_graph(
        {.batch = 2, .seq = 6, .heads = 2, .d = 8, .e = 3, .causal = causal}, true);
    const ir::LoweredRoutine r = ir::lower(grad_update_code(g.loss), "attention");
    // 24 rows per nest: small blocks and a low threshold, so every nest takes several blocks.
    const ir::Target target = gpu_test_target();
    const ir::LoweredRoutine s = default_gpu_schedule(
        r, {.target = target, .block_size = 8, .min_parallel = 4, .tiles = false});
    const std::vector<Segment> segments = fission(lower_for_target(s, target), target);
    int multi_block = 0;
    for (const Segment& k : segments)
      if (k.kind == Segment::Kind::Kernel && k.geometry.blocks() > 1) ++multi_block;
    EXPECT_GE(multi_block, 4) << "causal " << causal;  // the forward, delta, dq and dk/dv nests at least
    const NodeBytes expected = run_interp(r);
    for (const Order order : {Order::Interpreter, Order::BlocksForward, Order::BlocksReversed})
      EXPECT_EQ(compare(expected, run_segments(s, segments, order), Tolerance::Bitwise), "")
          << "causal " << causal;
  }
}

}  // namespace
}  // namespace cannl::schedule::testing
