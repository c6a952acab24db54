// A routine's kernels ranked by their static load (kernel_census.h).
#include "cannl/schedule/kernel_census.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "cannl/ir/tree_mapper.h"

namespace cannl::schedule {

namespace {

// The nodes `body` writes, in program order, each once.
std::string written_nodes(const ir::StmtRef& body) {
  std::vector<std::string> names;
  const auto add = [&](const ir::NodeRef& n) {
    const std::string name = n->debug_name();
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  ir::for_each_stmt(body, [&](const ir::Stmt& s) {
    if (const auto* x = std::get_if<ir::Set>(&s.node)) add(x->node);
    if (const auto* x = std::get_if<ir::SetDynamic>(&s.node)) add(x->node);
    if (const auto* x = std::get_if<ir::ZeroOut>(&s.node)) add(x->node);
    if (const auto* x = std::get_if<ir::TileMma>(&s.node)) add(x->d.node);
  });
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::vector<KernelCensusRow> kernel_census(std::span<const Segment> segments, const ir::GpuLimits& limits) {
  std::vector<KernelCensusRow> rows;
  for (const Segment& s : segments) {
    if (s.kind != Segment::Kind::Kernel) continue;
    rows.push_back({rows.size(), s.geometry, ir::kernel_load(s.body, s.geometry, limits), written_nodes(s.body)});
  }
  return rows;
}

std::vector<KernelCensusRow> starving_kernels(std::span<const KernelCensusRow> census) {
  std::vector<KernelCensusRow> out;
  std::copy_if(census.begin(), census.end(), std::back_inserter(out),
               [](const KernelCensusRow& r) { return r.load.starves; });
  return out;
}

namespace {

std::string percent(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g%%", 100 * share);
  return text;
}

std::string describe(const KernelCensusRow& r, double total) {
  std::ostringstream s;
  s << "  k" << r.kernel << "  " << r.geometry.blocks() << " x " << r.geometry.threads_per_block() << " threads";
  if (r.load.device_threads > 0) s << " (" << percent(r.load.device_share()) << " of the device)";
  s << ", " << r.load.steps_per_thread << " steps per thread";
  if (r.load.waves > 1) s << " in " << r.load.waves << " waves";
  if (total > 0) s << ", " << percent(static_cast<double>(r.load.critical_steps) / total) << " of the steps";
  if (!r.writes.empty()) s << ": " << r.writes;
  return s.str() + "\n";
}

}  // namespace

std::string kernel_census_summary(std::span<const KernelCensusRow> census, const std::string& routine,
                                  std::size_t top) {
  double total = 0;
  for (const auto& r : census) total += static_cast<double>(r.load.critical_steps);
  std::ostringstream s;
  s << routine << ": " << census.size() << " kernels, " << total << " critical steps";
  if (!census.empty() && census.front().load.device_threads > 0)
    s << " on " << census.front().load.device_threads << " resident threads";
  s << (census.empty() ? "\n" : "; the heaviest:\n");
  std::vector<KernelCensusRow> heaviest(census.begin(), census.end());
  std::stable_sort(heaviest.begin(), heaviest.end(), [](const auto& a, const auto& b) {
    return a.load.critical_steps > b.load.critical_steps;
  });
  heaviest.resize(std::min(top, heaviest.size()));
  for (const auto& r : heaviest) s << describe(r, total);
  const std::vector<KernelCensusRow> starving = starving_kernels(census);
  if (!starving.empty()) s << "kernels that starve the device (few threads, long serial work):\n";
  for (const auto& r : starving) s << describe(r, total);
  return s.str();
}

}  // namespace cannl::schedule
