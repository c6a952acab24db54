// Run-argument checks shared by every backend (run_arguments.h).
#include "backends/run_arguments.h"

#include <string>

#include "cannl/support/error.h"

namespace cannl::backends {

namespace {

void check_statics(const CompileRequest& request, std::span<const std::int64_t> values) {
  const auto& statics = request.routine.statics;
  if (values.size() != statics.size()) {
    throw RuntimeUsageError("routine " + request.routine.name + " takes " +
                            std::to_string(statics.size()) + " static values but got " +
                            std::to_string(values.size()));
  }
  for (std::size_t k = 0; k < statics.size(); ++k) {
    if (statics[k].range > 0 && (values[k] < 0 || values[k] >= statics[k].range)) {
      throw RuntimeUsageError("routine " + request.routine.name + ": static value " + statics[k].name +
                              " = " + std::to_string(values[k]) + " is outside [0, " +
                              std::to_string(statics[k].range) + ")");
    }
  }
}

}  // namespace

void check_run_arguments(const CompileRequest& request, std::span<Buffer* const> buffers,
                         std::span<const std::int64_t> static_values) {
  const auto& name = request.routine.name;
  if (buffers.size() != request.params.size()) {
    throw RuntimeUsageError("routine " + name + " takes " + std::to_string(request.params.size()) +
                            " buffers but got " + std::to_string(buffers.size()));
  }
  check_statics(request, static_values);
  for (std::size_t k = 0; k < buffers.size(); ++k) {
    const auto& node = *request.params[k];
    if (buffers[k] == nullptr) {
      throw RuntimeUsageError("routine " + name + ": no buffer for node " + node.debug_name());
    }
    if (buffers[k]->size() < node.size_in_bytes()) {
      throw RuntimeUsageError("routine " + name + ": the buffer of node " + node.debug_name() +
                              " has " + std::to_string(buffers[k]->size()) + " bytes, needs " +
                              std::to_string(node.size_in_bytes()));
    }
  }
}

}  // namespace cannl::backends
