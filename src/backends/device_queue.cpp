// DeviceQueue: one worker thread per device running its tasks in FIFO order.
#include "cannl/backends/device_queue.h"

#include <utility>

#include "cannl/support/error.h"

namespace cannl::backends {

namespace {

// What a wait_for task throws when the work it waits for failed: that failure happened on
// another queue and already names it, so this queue passes it on as it is.
struct AwaitedFailure {
  std::exception_ptr failure;
};

}  // namespace

struct Event::State {
  mutable std::mutex mutex;
  mutable std::condition_variable done_changed;
  bool done = false;
  std::exception_ptr failure;  // set when the work before it failed or was skipped
};

Event::Event() : state_(std::make_shared<State>()) { state_->done = true; }

Event::Event(std::shared_ptr<State> state) : state_(std::move(state)) {}

void Event::wait() const {
  std::unique_lock lock(state_->mutex);
  state_->done_changed.wait(lock, [this] { return state_->done; });
}

bool Event::is_done() const {
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

std::exception_ptr Event::failure() const {
  std::lock_guard lock(state_->mutex);
  return state_->failure;
}

void Event::complete(std::exception_ptr failure) const {
  {
    std::lock_guard lock(state_->mutex);
    state_->done = true;
    state_->failure = std::move(failure);
  }
  state_->done_changed.notify_all();
}

DeviceQueue::DeviceQueue(std::string name) : name_(std::move(name)), worker_([this] { work(); }) {}

DeviceQueue::~DeviceQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

Event DeviceQueue::enqueue(std::function<void()> task) {
  Event event(std::make_shared<Event::State>());
  {
    std::lock_guard lock(mutex_);
    tasks_.emplace_back(std::move(task), event);
  }
  wake_.notify_all();
  return event;
}

Event DeviceQueue::record() { return enqueue([] {}); }

void DeviceQueue::wait_for(const Event& event) {
  if (event.is_done() && !event.failure()) return;
  // A failure of the awaited work fails this queue too: what it enqueues next may read results
  // that were never written.
  enqueue([event] {
    event.wait();
    if (auto failure = event.failure()) throw AwaitedFailure{failure};
  });
}

void DeviceQueue::synchronize() {
  record().wait();
  std::exception_ptr failure;
  {
    std::lock_guard lock(mutex_);
    std::swap(failure, failure_);
  }
  if (failure) std::rethrow_exception(failure);
}

// The task's own failure, its message naming this queue (the task rarely knows which device it
// runs on); the type stays, for callers that catch a specific error.
std::exception_ptr DeviceQueue::failed_here(std::exception_ptr failure) const {
  return with_context(std::move(failure), "work queued on " + name_ + " failed");
}

void DeviceQueue::work() {
  for (;;) {
    std::pair<std::function<void()>, Event> item;
    std::exception_ptr earlier_failure;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and everything queued is done
      item = std::move(tasks_.front());
      tasks_.pop_front();
      earlier_failure = failure_;
    }
    // A failed task's successors are skipped but still complete their events, so nobody waiting
    // on them (another queue, the host) waits forever; the events carry the failure, so a queue
    // waiting on one fails in turn and a skipped write is known as such.
    std::exception_ptr failure = earlier_failure;
    if (!failure) {
      try {
        item.first();
      } catch (const AwaitedFailure& awaited) {
        failure = awaited.failure;
      } catch (...) {
        failure = failed_here(std::current_exception());
      }
      if (failure) {
        std::lock_guard lock(mutex_);
        failure_ = failure;
      }
    }
    item.second.complete(std::move(failure));
  }
}

}  // namespace cannl::backends
