// ContextState: what a device's queue reports back into the context's bookkeeping.
#include "runtime/context_state.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "cannl/backends/backend.h"

namespace cannl::testing {
namespace {

using runtime::ContextState;

// A run or copy marks its outputs initialized when it is enqueued. When the queue later reports a
// failure, the outputs of the failed task and of the tasks skipped behind it hold nothing they
// were said to hold: reading them must be an UninitializedError, not stale or zero values.
TEST(ContextStateTest, AQueuedWriteThatFailedOrWasSkippedLeavesItsNodeUninitialized) {
  ContextState state(backends::make_interpreter_backend());
  state.queue = std::make_unique<backends::DeviceQueue>("device 0");
  const auto before = ir::make_node("before", ir::DType::F32, {2});
  const auto failed = ir::make_node("failed", ir::DType::F32, {2});
  const auto skipped = ir::make_node("skipped", ir::DType::F32, {2});
  state.mark_written(*before, ContextState::Writer::Routine, state.queue->enqueue([] {}));
  state.mark_written(*failed, ContextState::Writer::Routine, state.queue->enqueue([] { throw std::runtime_error("kernel fault"); }));
  state.mark_written(*skipped, ContextState::Writer::Routine, state.queue->enqueue([] {}));
  EXPECT_TRUE(state.initialized.contains(skipped->id));
  EXPECT_THROW(state.wait_for_device(), std::runtime_error);
  EXPECT_TRUE(state.initialized.contains(before->id));
  EXPECT_FALSE(state.initialized.contains(failed->id));
  EXPECT_FALSE(state.initialized.contains(skipped->id));
  // The failure is reported once; work queued after it runs and counts again.
  state.mark_written(*skipped, ContextState::Writer::Routine, state.queue->enqueue([] {}));
  EXPECT_NO_THROW(state.wait_for_device());
  EXPECT_TRUE(state.initialized.contains(skipped->id));
}

}  // namespace
}  // namespace cannl::testing
