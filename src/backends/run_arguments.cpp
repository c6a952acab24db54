// Run-argument checks shared by every backend (run_arguments.h).
#include "backends/run_arguments.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

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

// Two parameters bound to one buffer: every backend prints its pointers `restrict` (a GPU may read
// an input through its non-coherent cache while another parameter writes the same memory).
void check_distinct(const CompileRequest& request, std::span<Buffer* const> buffers) {
  std::vector<std::pair<const Buffer*, std::size_t>> sorted;
  sorted.reserve(buffers.size());
  for (std::size_t k = 0; k < buffers.size(); ++k) sorted.emplace_back(buffers[k], k);
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t k = 1; k < sorted.size(); ++k)
    if (sorted[k].first == sorted[k - 1].first)
      throw RuntimeUsageError("routine " + request.routine.name + ": nodes " +
                              request.params[sorted[k - 1].second]->debug_name() + " and " +
                              request.params[sorted[k].second]->debug_name() +
                              " are bound to one buffer; each node needs its own");
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
  check_distinct(request, buffers);
}

}  // namespace cannl::backends
