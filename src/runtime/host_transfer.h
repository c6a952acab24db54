#pragma once
// Host <-> buffer copies of a node's logical (unpadded) cells, shared by the Context's get/set
// methods and by link-time upload of host-init data. Padding margins are never read or written.
//
//   upload_logical_bytes(state, node, bytes, "set_bytes");   // marks node initialized

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/context_state.h"

namespace cannl::runtime {

/// Writes the logical cells of `node` (storage format, row-major, unpadded), allocating its buffer
/// if needed and keeping its margins; marks it initialized. `what` names the caller in messages.
/// Throws RuntimeUsageError when bytes.size() is not the node's logical size in bytes.
void upload_logical_bytes(ContextState& state, const ir::NodeRef& node,
                          std::span<const std::byte> bytes, std::string_view what);

/// The buffer of `node`, checked for reading once the device's queue drained (rethrowing a failure
/// of its work): throws RuntimeUsageError when it has no buffer here (naming the optimizer's
/// decision when it was optimized away) and UninitializedError when nothing ever wrote it.
backends::Buffer& readable_buffer(ContextState& state, const ir::NodeRef& node,
                                  std::string_view what);

/// Reads the logical cells of `node`. Throws RuntimeUsageError when it has no buffer here and
/// UninitializedError when nothing ever wrote it.
std::vector<std::byte> download_logical_bytes(ContextState& state,
                                              const ir::NodeRef& node, std::string_view what);

}  // namespace cannl::runtime
