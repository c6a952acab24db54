#pragma once
// The shared state behind Context handles: the backend, node buffers, which nodes hold valid data,
// and the ledger of which routine last wrote / read each node (semantics-backend.md 7).
//
//   auto state = std::make_shared<ContextState>(backends::make_interpreter_backend());
//   backends::Buffer& b = state->ensure_buffer(node);

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cannl/backends/backend.h"
#include "cannl/backends/device_queue.h"
#include "cannl/ir/tensor_node.h"

namespace cannl::runtime {

/// Per node: the routine that last wrote it and the routines that read it since (compile order).
struct NodeHistory {
  int last_writer = -1;
  std::vector<int> readers_since;
};

/// A node's buffer; the node is kept alive so messages can name it.
struct NodeBuffer {
  ir::NodeRef node;
  std::unique_ptr<backends::Buffer> buffer;
};

/// The kernel timings of one profiled routine (config key profile_kernels), after each run.
struct RoutineProfile {
  std::string name;
  std::int64_t runs = 0;
  std::int64_t run_ns = 0;  // wall time of the runs
  std::vector<backends::KernelTiming> kernels;  // the executable's totals since it was made
  std::vector<backends::KernelTiming> baseline;  // its totals at the last reset (empty: none)
};

class ContextState {
 public:
  explicit ContextState(std::shared_ptr<backends::Backend> backend);
  /// Adds the profiled routines' rows to the process's kernel_profile.tsv (kernel_profile.cpp).
  ~ContextState();
  ContextState(const ContextState&) = delete;
  ContextState& operator=(const ContextState&) = delete;

  /// The buffer of `node`, allocated (zero-filled) on first need. A buffer that would take the
  /// context's buffers past the memory budget (cannl/support/memory_budget.h) is a
  /// RuntimeUsageError naming the node, before anything is allocated.
  backends::Buffer& ensure_buffer(const ir::NodeRef& node);
  /// The buffer of `node`, or nullptr when it has none here.
  backends::Buffer* find_buffer(const ir::TensorNode& node) const;

  /// Waits for the device's queue (a no-op without one) and rethrows a failure of its work:
  /// before any host access to buffers. After a failure, the nodes whose queued writes did not
  /// happen (the failed task and the ones skipped behind it) are no longer initialized.
  void wait_for_device();
  /// Waits for the backend's own queue (a GPU stream; a no-op for the CPU backends) and rethrows
  /// a failure of its work: before the host reads or writes buffers, and in Context::synchronize.
  /// After a failure, the nodes written since the last such wait that succeeded are no longer
  /// initialized (the failed kernel's outputs are among them; the stream says not which).
  void wait_for_backend();
  /// Both waits, as before the host reads or writes a buffer: the worker queue's routines, then
  /// the backend's stream.
  void wait_for_all_work();
  /// Who wrote a node's current value: one of the context's routines, or the outside (the host,
  /// another device's copy, a device average).
  enum class Writer { Routine, Outside };
  /// `node` holds a new value from `writer`: initialized, its write count raised (packings of it
  /// refresh), and on a queued device the event of the work that writes it remembered (`done`,
  /// by default a complete event: written already).
  void mark_written(const ir::TensorNode& node, Writer writer, const backends::Event& done = {});
  /// The node `id` holds no value it was said to hold (its write failed, or stopped half way): no
  /// longer initialized, so a read or a routine reading it is an UninitializedError, and its
  /// write count raised, so no packing of it is reused.
  void forget_value(int id);
  /// Why node `id` holds no value, for an UninitializedError: "lost its value: the run, copy or
  /// device average writing it failed, ..." for a node of lost_values, else "was never written
  /// or uploaded in this context".
  std::string why_uninitialized(int id) const;

  std::shared_ptr<backends::Backend> backend;
  /// The device's FIFO queue (devices of a multi-device context); null: routines run on the
  /// calling thread.
  std::unique_ptr<backends::DeviceQueue> queue;
  int device_index = 0;
  std::unordered_map<int, NodeBuffer> buffers;
  std::unordered_set<int> initialized;
  std::unordered_map<int, NodeHistory> history;
  std::unordered_map<int, std::string> routine_names;  // by routine id
  std::unordered_set<int> routines_run;
  /// Nodes an optimized routine placed Virtual or Local (no buffer here), with the decision
  /// text: host reads of them fail with this explanation.
  std::unordered_map<int, std::string> optimized_away;
  /// How many times each node was written (host uploads, runs of routines writing it, copies from
  /// another device, device averages): packed
  /// operands compare it with the count at their last packing (routine_data.h, Packing).
  std::unordered_map<int, std::uint64_t> write_counts;
  /// Nodes whose cells Context::host_storage handed out: the host may write them in place at any
  /// time, unseen by write_counts, so packings of them refresh before every run.
  std::unordered_set<int> host_writable;
  /// Nodes whose current value came from outside the routines (Writer::Outside): a routine that
  /// reads one no longer needs its compile-time writer to have run (dependencies.h).
  std::unordered_set<int> written_from_outside;
  /// Per node written by work still on the queue (or not yet waited for): the event of its last
  /// writer. wait_for_device forgets the nodes whose writer failed.
  std::unordered_map<int, backends::Event> queued_writes;
  /// Nodes whose last write failed (forget_value) and that nothing wrote since: messages say so,
  /// rather than that the node was never written.
  std::unordered_set<int> lost_values;
  /// Without a worker queue: the nodes written since wait_for_backend last succeeded. A GPU
  /// backend's run only enqueues its kernels, so a later wait may report that any of them failed.
  std::unordered_set<int> unsynchronized_writes;
  int next_routine_id = 0;
  std::int64_t buffer_bytes = 0;  // the sum over `buffers`, charged against the memory budget
  /// Profiled routines by id (only those compiled with kernel profiling that ran), guarded by
  /// profile_mutex: a device's worker thread records its queued runs while the host may read.
  std::map<int, RoutineProfile> kernel_profiles;
  mutable std::mutex profile_mutex;

 private:
  void forget_failed_writes();
};

/// "x (id 7, f32 [64,2])": how messages name a node.
std::string describe_node(const ir::TensorNode& node);

}  // namespace cannl::runtime
