// Host transfers: get/set of logical values and raw storage bytes.
#include "runtime/host_transfer.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "cannl/runtime/context.h"
#include "cannl/support/error.h"
#include "runtime/node_layout.h"
#include "runtime/value_codec.h"

namespace cannl::runtime {

namespace {

void require_node(const ir::NodeRef& node, std::string_view what) {
  if (!node) throw RuntimeUsageError(std::string(what) + " was given a null node");
}

std::size_t logical_bytes(const ir::TensorNode& node) {
  const auto count = node.num_logical_elements();
  return count <= 0 ? 0 : static_cast<std::size_t>(count) * ir::dtype_bytes(node.dtype);
}

}  // namespace

void upload_logical_bytes(ContextState& state, const ir::NodeRef& node,
                          std::span<const std::byte> bytes, std::string_view what) {
  require_node(node, what);
  if (bytes.size() != logical_bytes(*node))
    throw RuntimeUsageError(std::string(what) + " for node " + describe_node(*node) + " got " +
                            std::to_string(bytes.size()) + " bytes but the node holds " +
                            std::to_string(logical_bytes(*node)) + " bytes (" +
                            std::to_string(node->num_logical_elements()) + " elements of " +
                            std::string(ir::dtype_name(node->dtype)) + ")");
  backends::Buffer& buffer = state.ensure_buffer(node);
  // Routines queued before may still read or write the buffer; a failure of theirs surfaces
  // here, what they were to write no longer initialized.
  state.wait_for_all_work();
  if (!node->is_padded()) {
    buffer.write(bytes);
  } else {
    // Read-modify-write so the margins keep whatever padding value they hold.
    std::vector<std::byte> whole(buffer.size());
    buffer.read(whole);
    const std::size_t cell = ir::dtype_bytes(node->dtype);
    const auto offsets = logical_cell_offsets(*node);
    for (std::size_t k = 0; k < offsets.size(); ++k)
      std::memcpy(whole.data() + static_cast<std::size_t>(offsets[k]) * cell,
                  bytes.data() + k * cell, cell);
    buffer.write(whole);
  }
  state.mark_written(*node, ContextState::Writer::Outside);
  // Buffer::write returns once the copy is made: a failure a later wait reports is not this one's.
  state.unsynchronized_writes.erase(node->id);
}

backends::Buffer& readable_buffer(ContextState& state, const ir::NodeRef& node,
                                  std::string_view what) {
  require_node(node, what);
  // A device with a queue (or a GPU stream) may still be writing it; a failure of that work
  // surfaces here, and what it left unwritten is no longer initialized.
  state.wait_for_all_work();
  backends::Buffer* buffer = state.find_buffer(*node);
  const auto away = state.optimized_away.find(node->id);
  if (away != state.optimized_away.end() &&
      (buffer == nullptr || !state.initialized.contains(node->id)))
    throw RuntimeUsageError(std::string(what) + ": node " + describe_node(*node) +
                            " was optimized away: " + away->second +
                            ". To read it from the host, mark it materialized before compiling "
                            "(ir::update_memory_mode(node, MemoryMode::Materialized, ...)), or "
                            "compile with optimize=false");
  if (buffer == nullptr)
    throw RuntimeUsageError(std::string(what) + ": node " + describe_node(*node) +
                            " has no buffer in this context (backend " +
                            std::string(state.backend->name()) +
                            "); compile a routine that uses it here or upload it with set_values");
  if (!state.initialized.contains(node->id))
    throw UninitializedError(std::string(what) + ": node " + describe_node(*node) + " " +
                             state.why_uninitialized(node->id) +
                             "; run the routine that computes it or upload it with set_values first");
  return *buffer;
}

std::vector<std::byte> download_logical_bytes(ContextState& state,
                                              const ir::NodeRef& node, std::string_view what) {
  const backends::Buffer& buffer = readable_buffer(state, node, what);
  std::vector<std::byte> whole(buffer.size());
  buffer.read(whole);
  if (!node->is_padded()) return whole;
  const std::size_t cell = ir::dtype_bytes(node->dtype);
  const auto offsets = logical_cell_offsets(*node);
  std::vector<std::byte> result(offsets.size() * cell);
  for (std::size_t k = 0; k < offsets.size(); ++k)
    std::memcpy(result.data() + k * cell,
                whole.data() + static_cast<std::size_t>(offsets[k]) * cell, cell);
  return result;
}

std::vector<double> Context::get_values(const ir::NodeRef& node) const {
  const auto bytes = download_logical_bytes(*state_, node, "get_values");
  const std::size_t cell = ir::dtype_bytes(node->dtype);
  std::vector<double> values(bytes.size() / cell);
  for (std::size_t k = 0; k < values.size(); ++k)
    values[k] = load_value(node->dtype, bytes.data() + k * cell);
  return values;
}

double Context::get_value(const ir::NodeRef& node, std::int64_t flat_index) const {
  require_node(node, "get_value");
  const std::int64_t count = node->num_logical_elements();
  if (flat_index < 0 || flat_index >= count)
    throw RuntimeUsageError("get_value: index " + std::to_string(flat_index) +
                            " is out of range for node " + describe_node(*node) + " with " +
                            std::to_string(count) + " elements");
  return get_values(node)[static_cast<std::size_t>(flat_index)];
}

void Context::set_values(const ir::NodeRef& node, std::span<const double> values) {
  require_node(node, "set_values");
  const auto count = static_cast<std::size_t>(std::max<std::int64_t>(0, node->num_logical_elements()));
  if (values.size() != count)
    throw RuntimeUsageError("set_values for node " + describe_node(*node) + " got " +
                            std::to_string(values.size()) + " values but the node has " +
                            std::to_string(count) + " logical elements");
  const std::size_t cell = ir::dtype_bytes(node->dtype);
  std::vector<std::byte> bytes(count * cell);
  for (std::size_t k = 0; k < count; ++k) store_value(node->dtype, values[k], bytes.data() + k * cell);
  upload_logical_bytes(*state_, node, bytes, "set_values");
}

std::vector<std::byte> Context::get_bytes(const ir::NodeRef& node) const {
  return download_logical_bytes(*state_, node, "get_bytes");
}

void Context::set_bytes(const ir::NodeRef& node, std::span<const std::byte> bytes) {
  upload_logical_bytes(*state_, node, bytes, "set_bytes");
}

std::span<std::byte> Context::host_storage(const ir::NodeRef& node) {
  backends::Buffer& buffer = readable_buffer(*state_, node, "host_storage");
  if (buffer.host_data() == nullptr || node->is_padded()) return {};
  state_->host_writable.insert(node->id);
  return {buffer.host_data(), std::min(buffer.size(), logical_bytes(*node))};
}

}  // namespace cannl::runtime
