// Per-kernel timings (see cannl/runtime/kernel_profile.h): rows of a context, the process's table
// of every profiled routine, kernel_profile.tsv and the logged summary.
#include "cannl/runtime/kernel_profile.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <tuple>

#include "cannl/runtime/context.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/log.h"
#include "runtime/context_state.h"

namespace cannl::runtime {

namespace {

// Tabs and line breaks would break the TSV's columns.
std::string one_cell(std::string text) {
  std::replace_if(text.begin(), text.end(), [](char c) { return c == '\t' || c == '\n' || c == '\r'; }, ' ');
  return text;
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::vector<KernelProfileRow> rows_of(const ContextState& state) {
  std::lock_guard lock(state.profile_mutex);
  std::vector<KernelProfileRow> rows;
  for (const auto& [id, profile] : state.kernel_profiles) {
    if (profile.runs == 0) continue;  // not run since the last reset
    for (std::size_t k = 0; k < profile.kernels.size(); ++k) {
      const backends::KernelTiming& t = profile.kernels[k];
      const bool reset = k < profile.baseline.size();
      rows.push_back({profile.name, static_cast<int>(k), t.label,
                      t.source_file + ":" + std::to_string(t.source_line),
                      t.calls - (reset ? profile.baseline[k].calls : 0),
                      t.total_ns - (reset ? profile.baseline[k].total_ns : 0), profile.runs, profile.run_ns});
    }
  }
  return rows;
}

std::string without_last_newline(std::string text) {
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

bool same_kernel(const KernelProfileRow& a, const KernelProfileRow& b) {
  return std::tie(a.routine, a.kernel, a.label, a.source) == std::tie(b.routine, b.kernel, b.label, b.source);
}

// Every profiled routine of the contexts this process has torn down: the same kernel of the
// same routine (same label and line) in several contexts is one row with summed times.
std::vector<KernelProfileRow> merge_into_process_table(const std::vector<KernelProfileRow>& rows) {
  static std::mutex mutex;
  static std::vector<KernelProfileRow> table;
  std::lock_guard lock(mutex);
  for (const auto& row : rows) {
    auto it = std::find_if(table.begin(), table.end(), [&](const auto& t) { return same_kernel(t, row); });
    if (it == table.end()) {
      table.push_back(row);
      continue;
    }
    it->calls += row.calls;
    it->total_ns += row.total_ns;
    it->routine_calls += row.routine_calls;
    it->routine_ns += row.routine_ns;
  }
  return table;
}

}  // namespace

double KernelProfileRow::mean_us() const {
  return calls == 0 ? 0.0 : static_cast<double>(total_ns) / 1e3 / static_cast<double>(calls);
}

double KernelProfileRow::share_percent() const {
  return routine_ns == 0 ? 0.0 : 100.0 * static_cast<double>(total_ns) / static_cast<double>(routine_ns);
}

std::vector<KernelProfileRow> sorted_by_total(std::vector<KernelProfileRow> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(-a.total_ns, a.routine, a.kernel) < std::make_tuple(-b.total_ns, b.routine, b.kernel);
  });
  return rows;
}

std::string kernel_profile_tsv(std::span<const KernelProfileRow> rows) {
  std::string out = "routine\tkernel\tlabel\tsource\tcalls\ttotal_ms\tmean_us\tshare_pct\n";
  for (const auto& r : rows) {
    out += one_cell(r.routine) + "\t" + std::to_string(r.kernel) + "\t" + one_cell(r.label) + "\t" +
           one_cell(r.source) + "\t" + std::to_string(r.calls) + "\t" + fixed(r.total_ms(), 3) + "\t" +
           fixed(r.mean_us(), 3) + "\t" + fixed(r.share_percent(), 2) + "\n";
  }
  return out;
}

std::string kernel_profile_summary(std::span<const KernelProfileRow> rows, std::size_t top) {
  std::string out;
  for (std::size_t k = 0; k < rows.size() && k < top; ++k) {
    const KernelProfileRow& r = rows[k];
    char head[96];
    std::snprintf(head, sizeof head, "%10.3f ms %10.1f us/call %6.2f%%  ", r.total_ms(), r.mean_us(),
                  r.share_percent());
    out += head + r.routine + "#" + std::to_string(r.kernel) + "  " + r.label + "  (" + r.source + ")\n";
  }
  return out;
}

namespace {

// The runs queued on a device so far have finished (their failures stay for synchronize to
// report): the profile covers every run the caller asked for.
void wait_for_queued_runs(const ContextState& state) {
  if (state.queue) state.queue->record().wait();
}

}  // namespace

std::vector<KernelProfileRow> Context::kernel_profile() const {
  wait_for_queued_runs(*state_);
  return sorted_by_total(rows_of(*state_));
}

void Context::reset_kernel_profile() {
  wait_for_queued_runs(*state_);
  std::lock_guard lock(state_->profile_mutex);
  for (auto& [id, profile] : state_->kernel_profiles) {
    profile.baseline = profile.kernels;
    profile.runs = 0;
    profile.run_ns = 0;
  }
}

ContextState::~ContextState() {
  // The queued work still uses the buffers, which are destroyed before the queue member would be.
  queue.reset();
  if (kernel_profiles.empty()) return;
  // A destructor must not throw: a profile that cannot be written is reported, not fatal.
  try {
    const auto table = sorted_by_total(merge_into_process_table(rows_of(*this)));
    const auto path = files::log_dir() / "kernel_profile.tsv";
    files::write_atomically(path, kernel_profile_tsv(table));
    logging::info("kernel profile (top 10 of " + std::to_string(table.size()) + " kernels; all in " +
                  path.string() + "):\n" + without_last_newline(kernel_profile_summary(table, 10)));
  } catch (const std::exception& e) {
    try {
      logging::warn(std::string("cannot write the kernel profile: ") + e.what());
    } catch (...) {
    }
  }
}

}  // namespace cannl::runtime
