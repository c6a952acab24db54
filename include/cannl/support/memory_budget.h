#pragma once
// The memory budget: sizes that come from user input (shapes, benchmark sizes, model configs) are
// checked against it before anything is allocated, so a typo in a size is a named error instead
// of a bare std::bad_alloc, or gigabytes of swapping with no end. Config key memory_budget_mb
// (0: half of the physical memory).
//
//   memory::check_budget(bytes, "tensor 'w1' (f32 [65536,65536])");   // RuntimeUsageError if over

#include <cstdint>
#include <string>

namespace cannl::memory {

/// The budget in bytes: memory_budget_mb x 2^20, or half of the physical memory when it is 0.
///   memory::budget_bytes() == 4294967296   // memory_budget_mb=4096
std::int64_t budget_bytes();

/// Throws RuntimeUsageError "<what> needs 16 GiB, more than the memory budget of 4 GiB (config
/// key memory_budget_mb)" when `bytes` is negative (an overflowed size) or over the budget.
void check_budget(std::int64_t bytes, const std::string& what);

/// "1.5 GiB", "512 MiB", "12 bytes": sizes in messages.
std::string format_bytes(std::int64_t bytes);

}  // namespace cannl::memory
