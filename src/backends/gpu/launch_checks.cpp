// Launch checks shared by the GPU devices (see launch_checks.h).
#include "backends/gpu/launch_checks.h"

#include <algorithm>

#include "cannl/support/error.h"

namespace cannl::backends::gpu {

namespace {

[[noreturn]] void over_limit(const std::string& kernel, const std::string& what, std::int64_t value,
                             std::int64_t limit) {
  throw RuntimeUsageError("kernel " + kernel + ": " + what + " is " + std::to_string(value) +
                          ", over the device's limit of " + std::to_string(limit) +
                          " (the GPU schedule's check_hardware_limits should have rejected it)");
}

constexpr const char* kSlotNames[3] = {"x", "y", "z"};

}  // namespace

bool launchable(const ir::KernelGeometry& geometry, const ir::GpuLimits& limits, const std::string& kernel) {
  bool empty = false;
  for (int slot = 0; slot < 3; ++slot) {
    const std::int64_t grid = geometry.grid[slot], block = geometry.block[slot];
    internal_check(grid >= 0 && block >= 0, [&] { return "kernel " + kernel + " has a negative launch extent"; });
    empty = empty || grid == 0 || block == 0;
    const std::string name = kSlotNames[slot];
    if (block > limits.max_block_dims[slot]) over_limit(kernel, "block." + name, block, limits.max_block_dims[slot]);
    if (grid > limits.max_grid_dims[slot]) over_limit(kernel, "grid." + name, grid, limits.max_grid_dims[slot]);
  }
  if (geometry.threads_per_block() > limits.max_threads_per_block)
    over_limit(kernel, "threads per block", geometry.threads_per_block(), limits.max_threads_per_block);
  if (geometry.shared_bytes > limits.max_shared_bytes)
    over_limit(kernel, "shared memory per block (bytes)", geometry.shared_bytes, limits.max_shared_bytes);
  return !empty;
}

void check_arity(const std::string& api, const std::string& kernel, std::size_t args, std::int64_t arity) {
  if (arity < 0 || static_cast<std::int64_t>(args) == arity) return;
  throw RuntimeUsageError(api + " launch of " + kernel + ": " + std::to_string(args) + " arguments for " +
                          std::to_string(arity) + " parameters");
}

void check_kernel_threads(const ir::KernelGeometry& geometry, std::int64_t kernel_limit, const std::string& kernel) {
  if (kernel_limit <= 0 || geometry.threads_per_block() <= kernel_limit) return;
  throw RuntimeUsageError("kernel " + kernel + ": threads per block is " + std::to_string(geometry.threads_per_block()) +
                          ", over the kernel's own limit of " + std::to_string(kernel_limit) +
                          " (below the device's: its registers or launch bounds allow no more)");
}

void PendingKernels::add(const std::string& kernel) {
  std::lock_guard lock(mutex_);
  names_[count_ % kKept].assign(kernel);
  ++count_;
}

void PendingKernels::clear() {
  std::lock_guard lock(mutex_);
  count_ = 0;
}

std::string PendingKernels::describe() const {
  std::lock_guard lock(mutex_);
  if (count_ == 0) return "";
  std::string out = "kernels enqueued since the last synchronization: ";
  const std::size_t kept = std::min(count_, kKept);
  if (count_ > kept) out += std::to_string(count_ - kept) + " earlier, then ";
  for (std::size_t k = count_ - kept; k < count_; ++k) out += (k == count_ - kept ? "" : ", ") + names_[k % kKept];
  return out;
}

}  // namespace cannl::backends::gpu
