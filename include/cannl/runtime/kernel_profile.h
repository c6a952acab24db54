#pragma once
// Where a compiled routine's time goes: per-kernel timings (config key `profile_kernels`, or
// debug >= 2). A kernel is one top-level statement of a routine (a loop nest, a matmul tile, a
// memset); the generated code times each with the monotonic clock. A context's rows come from
// Context::kernel_profile(); when a context goes away its rows join the process's table, which is
// rewritten to log_files/<exe>/kernel_profile.tsv, and the top 10 are logged.
//
//   config::set_override("profile_kernels", "true");
//   ... ctx.run(step) x 20 ...
//   std::cout << runtime::kernel_profile_summary(ctx.kernel_profile(), 10);

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cannl::runtime {

/// One kernel of one routine, over every run so far.
///   {"train_step", 3, "forward: matmul tile 256x1024x256 -> h", "train_step.c:212", 20, 41000000, 20, 90000000}
struct KernelProfileRow {
  std::string routine;
  int kernel = 0;        // index in program order
  std::string label;
  std::string source;    // "<routine>.c:<line>" under build_files/<exe>/
  std::int64_t calls = 0;
  std::int64_t total_ns = 0;
  std::int64_t routine_calls = 0;  // runs of the routine (Context::run)
  std::int64_t routine_ns = 0;     // their wall time, kernels and call overhead included

  double total_ms() const { return static_cast<double>(total_ns) / 1e6; }
  /// Mean microseconds per call (0 before the first call).
  double mean_us() const;
  /// Percent of the routine's wall time spent in this kernel (0 before the first run).
  double share_percent() const;
};

/// `rows` sorted by total time, largest first (ties: routine, then kernel index).
std::vector<KernelProfileRow> sorted_by_total(std::vector<KernelProfileRow> rows);

/// Tab-separated table with a header line: routine, kernel, label, source, calls, total_ms,
/// mean_us, share_pct; rows in the given order.
std::string kernel_profile_tsv(std::span<const KernelProfileRow> rows);

/// A readable table of the first `top` rows ("" when there are none):
///   "  41.2 ms  45.8%  train_step#3  forward: matmul tile ...  (train_step.c:212)"
std::string kernel_profile_summary(std::span<const KernelProfileRow> rows, std::size_t top = 10);

}  // namespace cannl::runtime
