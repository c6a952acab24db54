#include "runtime/context_state.h"

#include "cannl/support/checked.h"
#include "cannl/support/error.h"
#include "cannl/support/memory_budget.h"

namespace cannl::runtime {

ContextState::ContextState(std::shared_ptr<backends::Backend> backend_)
    : backend(std::move(backend_)) {
  internal_check(backend != nullptr, "ContextState created without a backend");
}

backends::Buffer& ContextState::ensure_buffer(const ir::NodeRef& node) {
  auto it = buffers.find(node->id);
  if (it != buffers.end()) return *it->second.buffer;
  const auto bytes = static_cast<std::int64_t>(node->size_in_bytes());
  const auto total = checked_add(buffer_bytes, bytes);
  memory::check_budget(total.value_or(-1), "tensor " + describe_node(*node) + " (with the " +
                                               memory::format_bytes(buffer_bytes) + " of buffers already held)");
  auto buffer = backend->allocate(node->size_in_bytes());
  buffer_bytes = *total;
  internal_check(buffer != nullptr && buffer->size() == node->size_in_bytes(),
                 [&] { return "backend allocated a wrong-sized buffer for " + describe_node(*node); });
  auto& slot = buffers[node->id];
  slot.node = node;
  slot.buffer = std::move(buffer);
  return *slot.buffer;
}

void ContextState::wait_for_device() {
  if (!queue) return;
  try {
    queue->synchronize();
  } catch (...) {
    forget_failed_writes();
    throw;
  }
  queued_writes.clear();
}

void ContextState::mark_written(const ir::TensorNode& node, Writer writer, const backends::Event& done) {
  initialized.insert(node.id);
  lost_values.erase(node.id);
  if (writer == Writer::Outside) written_from_outside.insert(node.id);
  else written_from_outside.erase(node.id);
  ++write_counts[node.id];
  if (queue) queued_writes.insert_or_assign(node.id, done);
  else unsynchronized_writes.insert(node.id);
}

void ContextState::wait_for_all_work() {
  wait_for_device();
  wait_for_backend();
}

void ContextState::wait_for_backend() {
  try {
    backend->synchronize();
  } catch (...) {
    for (int id : unsynchronized_writes) forget_value(id);
    unsynchronized_writes.clear();
    throw;
  }
  unsynchronized_writes.clear();
}

// The queue is drained: a node whose last queued writer failed, or was skipped for an earlier
// failure, holds no value it was said to hold (the run or copy marked it initialized when it was
// enqueued).
void ContextState::forget_failed_writes() {
  for (const auto& [id, done] : queued_writes)
    if (done.failure()) forget_value(id);
  queued_writes.clear();
}

void ContextState::forget_value(int id) {
  initialized.erase(id);
  lost_values.insert(id);
  ++write_counts[id];
}

std::string ContextState::why_uninitialized(int id) const {
  if (!lost_values.contains(id)) return "was never written or uploaded in this context";
  return "lost its value: the run, copy or device average writing it failed, or was skipped after a "
         "failure (see that error)";
}

backends::Buffer* ContextState::find_buffer(const ir::TensorNode& node) const {
  auto it = buffers.find(node.id);
  return it == buffers.end() ? nullptr : it->second.buffer.get();
}

std::string describe_node(const ir::TensorNode& node) {
  std::string dims;
  for (auto d : node.logical_dims()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  return "'" + node.debug_name() + "' (id " + std::to_string(node.id) + ", " +
         std::string(ir::dtype_name(node.dtype)) + " [" + dims + "])";
}

}  // namespace cannl::runtime
