#pragma once
// A device's FIFO queue of work and the events that order work across queues.
//
// A DeviceQueue runs the tasks it is given one after another, in order, on a worker thread of its
// own, and returns at once: the caller goes on enqueueing (on this queue or another one) while the
// work runs. An Event completes when the work before it is done; a queue told to wait for another
// queue's event starts its next task only then. This is how several devices of a context run
// concurrently (multi-device CPU contexts: one queue per device) and still see each other's
// results in order (a copy waits for the writer on the source device).
//
//   backends::DeviceQueue q0("device 0"), q1("device 1");
//   q0.enqueue([&] { produce(a); });
//   q1.wait_for(q0.record());           // q1's next task starts after produce(a)
//   q1.enqueue([&] { consume(a); });
//   q1.synchronize();                    // rethrows the first failure of a task, if any

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace cannl::backends {

/// Completes once the work it stands for is done. Copies share the same completion.
class Event {
 public:
  /// An event that is already complete.
  Event();
  /// Blocks until the event completes.
  void wait() const;
  bool is_done() const;
  /// Once done: the exception of the task it stands for, or of the earlier task whose failure
  /// made the queue skip it; null when that task ran and returned.
  std::exception_ptr failure() const;

 private:
  friend class DeviceQueue;
  struct State;
  explicit Event(std::shared_ptr<State> state);
  void complete(std::exception_ptr failure) const;
  std::shared_ptr<State> state_;
};

class DeviceQueue {
 public:
  /// Starts the worker thread; `name` says which device's queue it is (name()).
  explicit DeviceQueue(std::string name);
  /// Finishes the queued work, then stops the worker (failures are dropped: call synchronize to
  /// see them).
  ~DeviceQueue();
  DeviceQueue(const DeviceQueue&) = delete;
  DeviceQueue& operator=(const DeviceQueue&) = delete;

  /// Appends `task`; returns the event of its completion. After a task threw, the queue skips the
  /// tasks behind it (their inputs may be wrong) until synchronize reports the failure.
  Event enqueue(std::function<void()> task);
  /// The event of everything enqueued so far.
  Event record();
  /// Tasks enqueued after this call start only once `event` (of any queue) completed. When the
  /// work behind `event` failed (or was skipped for a failure), this queue fails with the same
  /// exception: its later tasks are skipped until synchronize reports it.
  void wait_for(const Event& event);
  /// Blocks until everything enqueued so far is done; rethrows the first exception a task threw
  /// since the last synchronize (the queue then runs new tasks again). A cannl error keeps its
  /// type, its message now beginning "work queued on <name> failed: " (cannl::with_context); a
  /// failure passed on by wait_for keeps the name of the queue where it happened.
  void synchronize();
  const std::string& name() const { return name_; }

 private:
  void work();
  std::exception_ptr failed_here(std::exception_ptr failure) const;
  std::string name_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<std::function<void()>, Event>> tasks_;
  std::exception_ptr failure_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace cannl::backends
