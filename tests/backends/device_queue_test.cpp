// DeviceQueue and Event: FIFO order, waits across queues, failures reported once.
#include "cannl/backends/device_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cannl/support/error.h"

namespace cannl::backends {
namespace {

TEST(DeviceQueueTest, RunsTasksInOrderAndReturnsAtOnce) {
  DeviceQueue q("q");
  std::vector<int> order;
  std::atomic<bool> release{false};
  q.enqueue([&] {
    while (!release) std::this_thread::yield();
    order.push_back(1);
  });
  Event second = q.enqueue([&] { order.push_back(2); });
  EXPECT_FALSE(second.is_done());  // enqueue did not wait for the blocked first task
  release = true;
  q.synchronize();
  EXPECT_TRUE(second.is_done());
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(DeviceQueueTest, WaitForOrdersWorkAcrossQueues) {
  DeviceQueue producer("producer"), consumer("consumer");
  std::atomic<int> value{0};
  std::atomic<bool> release{false};
  producer.enqueue([&] {
    while (!release) std::this_thread::yield();
    value = 42;
  });
  consumer.wait_for(producer.record());
  int seen = -1;
  consumer.enqueue([&] { seen = value; });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  release = true;
  consumer.synchronize();
  EXPECT_EQ(seen, 42);
}

TEST(DeviceQueueTest, AFailedTaskSkipsItsSuccessorsAndIsRethrownOnce) {
  DeviceQueue q("q");
  bool ran_after = false;
  q.enqueue([] { throw std::runtime_error("device fault"); });
  Event after = q.enqueue([&] { ran_after = true; });
  EXPECT_THROW(q.synchronize(), std::runtime_error);
  EXPECT_TRUE(after.is_done());  // skipped, but complete: nobody waits on it forever
  EXPECT_FALSE(ran_after);
  q.enqueue([&] { ran_after = true; });
  EXPECT_NO_THROW(q.synchronize());
  EXPECT_TRUE(ran_after);
}

// Work that waits on failed work must not run on what it never wrote: the waiting queue fails too,
// with the same exception, and the skipped task's event carries it.
TEST(DeviceQueueTest, AQueueWaitingOnFailedWorkFailsToo) {
  DeviceQueue producer("producer"), consumer("consumer");
  producer.enqueue([] { throw std::runtime_error("device fault"); });
  const Event produced = producer.record();
  consumer.wait_for(produced);
  bool consumed = false;
  const Event done = consumer.enqueue([&] { consumed = true; });
  EXPECT_THROW(producer.synchronize(), std::runtime_error);
  try {
    consumer.synchronize();
    ADD_FAILURE() << "the consumer ran on work that failed";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "device fault");  // not a cannl error: passed on unchanged
  }
  EXPECT_FALSE(consumed);
  ASSERT_TRUE(done.is_done());
  EXPECT_TRUE(done.failure() != nullptr);
  // An event that is already complete and failed fails a queue that waits for it later, too.
  consumer.wait_for(produced);
  EXPECT_THROW(consumer.synchronize(), std::runtime_error);
  consumer.enqueue([&] { consumed = true; });
  consumer.synchronize();
  EXPECT_TRUE(consumed);
}

// A caller of synchronize learns which device failed, and still catches the error the task threw.
TEST(DeviceQueueTest, AFailedTasksErrorKeepsItsTypeAndNamesTheQueue) {
  DeviceQueue q("cc device 3");
  q.enqueue([] { throw ResourceError("routine step could not allocate its scratch memory"); });
  try {
    q.synchronize();
    ADD_FAILURE() << "expected the task's ResourceError";
  } catch (const ResourceError& e) {
    EXPECT_STREQ(e.what(), "work queued on cc device 3 failed: routine step could not allocate its scratch memory");
  }
}

// The failure a waiting queue passes on names the queue where it happened, once.
TEST(DeviceQueueTest, AFailurePassedOnNamesTheQueueWhereItHappened) {
  DeviceQueue producer("cc device 0"), consumer("cc device 1");
  producer.enqueue([] { throw RuntimeError("kernel fault"); });
  consumer.wait_for(producer.record());
  EXPECT_THROW(producer.synchronize(), RuntimeError);
  try {
    consumer.synchronize();
    ADD_FAILURE() << "expected the producer's RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "work queued on cc device 0 failed: kernel fault");
  }
}

TEST(DeviceQueueTest, ADefaultEventIsComplete) {
  EXPECT_TRUE(Event().is_done());
  EXPECT_TRUE(Event().failure() == nullptr);
}

}  // namespace
}  // namespace cannl::backends
