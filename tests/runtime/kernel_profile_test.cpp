// Per-kernel timings through the runtime (config key profile_kernels): Context::kernel_profile,
// the TSV written when a context goes away, and the table / summary formats.
#include "cannl/runtime/kernel_profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/support/files.h"
#include "runtime/test_util.h"

namespace cannl::testing {
namespace {

using ir::DType;
using ir::Op;
using runtime::Context;
using runtime::KernelProfileRow;

struct Overrides {
  explicit Overrides(const std::string& profile) { config::set_override("profile_kernels", profile); }
  ~Overrides() { config::clear_overrides(); }
};

/// The inputs w, x, t of grad_comp.
std::vector<ir::NodeRef> grad_inputs() {
  std::vector<ir::NodeRef> in;
  for (const char* label : {"w", "x", "t"}) in.push_back(ir::make_node(label, DType::F32, {64, 64}));
  return in;
}

/// e := w * x; e := e - t; g := e * x over 64 x 64 cells, then p := e @ x (a zeroed
/// accumulator and a reduction nest).
ir::Comp grad_comp(const std::vector<ir::NodeRef>& in) {
  auto e = ir::make_node("e", DType::F32, {64, 64});
  auto g = ir::make_node("grad_w", DType::F32, {64, 64});
  auto p = ir::make_node("p", DType::F32, {64, 64});
  return accum_sequence({pointwise(e, Op::Mul, {of(in[0]), of(in[1])}), pointwise(e, Op::Sub, {of(e), of(in[2])}),
                         pointwise(g, Op::Mul, {of(e), of(in[1])}),
                         accum_op(p, Op::Add, Op::Mul, {of(e), of(in[1])}, matmul_projections(64, 64, 64),
                                  /*init=*/true)});
}

void upload(Context& ctx, const std::vector<ir::NodeRef>& in) {
  for (const auto& node : in) ctx.set_values(node, std::vector<double>(64 * 64, 0.5));
}

/// grad_comp over fresh inputs, every one uploaded.
runtime::Routine compile_grad(Context& ctx, const std::string& name) {
  const auto in = grad_inputs();
  upload(ctx, in);
  return ctx.compile(grad_comp(in), name);
}

/// Top-level statements of the compiled body that are kernels (block Seqs flattened; comments
/// and scalar declarations are not).
int top_level_kernels(const ir::StmtRef& s) {
  if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
    int n = 0;
    for (const auto& x : q->stmts) n += top_level_kernels(x);
    return n;
  }
  return std::holds_alternative<ir::Comment>(s->node) || std::holds_alternative<ir::DeclareLocal>(s->node) ? 0 : 1;
}

TEST(KernelProfile, OneRowPerTopLevelStatementCountingEveryRun) {
  Overrides on("true");
  auto ctx = Context::cpu();
  auto grad = compile_grad(ctx, "profiled_grad");
  constexpr int kRuns = 4;
  for (int r = 0; r < kRuns; ++r) ctx.run(grad);
  const std::vector<KernelProfileRow> rows = ctx.kernel_profile();
  ASSERT_GE(rows.size(), 2u) << "the test routine should have several kernels";
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(top_level_kernels(grad.lowered().body)));
  std::int64_t sum = 0;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    EXPECT_EQ(rows[k].routine, "profiled_grad");
    EXPECT_EQ(rows[k].calls, kRuns) << rows[k].label;
    EXPECT_EQ(rows[k].routine_calls, kRuns);
    EXPECT_EQ(rows[k].source.rfind("profiled_grad.c:", 0), 0u) << rows[k].source;
    if (k > 0) {
      EXPECT_GE(rows[k - 1].total_ns, rows[k].total_ns) << "not sorted by total";
    }
    sum += rows[k].total_ns;
  }
  EXPECT_LE(sum, rows.front().routine_ns) << "kernels took longer than the routine";
}

// The devices of cpu_devices run one loaded library (the same source) on their worker threads at
// once: each device's profile counts its own runs, however they interleave.
TEST(KernelProfile, EachDeviceCountsItsOwnRunsOfASharedLibrary) {
  Overrides on("true");
  auto devices = Context::cpu_devices(2);
  std::vector<Context> device = {devices.device(0), devices.device(1)};
  const auto in = grad_inputs();
  const ir::Comp comp = grad_comp(in);
  std::vector<runtime::Routine> step;
  for (auto& d : device) {
    upload(d, in);
    step.push_back(d.compile(comp, "shared_grad"));
  }
  ASSERT_EQ(step[0].source(), step[1].source()) << "the devices should share one library";
  // Several kernels a run: one device's collection of the counters can fall between another's
  // laps on most of its run.
  const int runs[2] = {900, 600};
  for (int r = 0; r < runs[0]; ++r) {
    device[0].run(step[0]);
    if (r < runs[1]) device[1].run(step[1]);
  }
  for (int k = 0; k < 2; ++k) {
    const std::vector<KernelProfileRow> rows = device[k].kernel_profile();
    ASSERT_EQ(rows.size(), static_cast<std::size_t>(top_level_kernels(step[k].lowered().body))) << "device " << k;
    for (const auto& row : rows) {
      EXPECT_EQ(row.calls, runs[k]) << "device " << k << ": " << row.label;
      EXPECT_EQ(row.routine_calls, runs[k]) << "device " << k;
    }
  }
}

TEST(KernelProfile, ResetCountsOnlyLaterRuns) {
  Overrides on("true");
  auto ctx = Context::cpu();
  auto grad = compile_grad(ctx, "reset_grad");
  auto other = compile_grad(ctx, "reset_other");
  ctx.run(other);
  ctx.run(grad);
  ctx.run(grad);
  ctx.reset_kernel_profile();
  EXPECT_TRUE(ctx.kernel_profile().empty());
  for (int r = 0; r < 3; ++r) ctx.run(grad);
  const std::vector<KernelProfileRow> rows = ctx.kernel_profile();
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    EXPECT_EQ(row.routine, "reset_grad") << "a routine not run since the reset is listed";
    EXPECT_EQ(row.calls, 3) << row.label;
    EXPECT_EQ(row.routine_calls, 3);
  }
}

TEST(KernelProfile, OffGivesNoRowsAndNoEntryPoint) {
  Overrides off("false");
  config::set_override("debug", "0");
  auto ctx = Context::cpu();
  auto grad = compile_grad(ctx, "unprofiled_grad");
  ctx.run(grad);
  EXPECT_TRUE(ctx.kernel_profile().empty());
  EXPECT_EQ(grad.source().find("cannl_profile_"), std::string::npos);
}

TEST(KernelProfile, InterpreterHasNoKernelTimings) {
  Overrides on("true");
  auto ctx = Context::interpreter();
  auto grad = compile_grad(ctx, "interpreted_grad");
  ctx.run(grad);
  EXPECT_TRUE(ctx.kernel_profile().empty());
}

TEST(KernelProfile, ContextTeardownWritesTheTable) {
  Overrides on("true");
  config::set_override("build_files_prefix", "kernel_profile_teardown");
  const auto path = files::log_dir() / "kernel_profile.tsv";
  std::filesystem::remove(path);
  // The process's table sums the rows of every context torn down so far: a name of its own per
  // run keeps this run's rows apart under --gtest_repeat.
  static int run = 0;
  const std::string routine = "teardown_grad" + std::to_string(run++);
  {
    auto ctx = Context::cpu();
    auto grad = compile_grad(ctx, routine);
    ctx.run(grad);
    ctx.run(grad);
    EXPECT_FALSE(std::filesystem::exists(path)) << "written before the context went away";
  }
  ASSERT_TRUE(std::filesystem::exists(path));
  std::istringstream table(files::read_file(path));
  std::string line;
  std::getline(table, line);
  EXPECT_EQ(line, "routine\tkernel\tlabel\tsource\tcalls\ttotal_ms\tmean_us\tshare_pct");
  int teardown_rows = 0;
  while (std::getline(table, line)) {
    if (line.rfind(routine + "\t", 0) != 0) continue;
    ++teardown_rows;
    EXPECT_NE(line.find("\t" + routine + ".c:"), std::string::npos) << line;
    EXPECT_NE(line.find("\t2\t"), std::string::npos) << "calls column: " << line;
  }
  EXPECT_GT(teardown_rows, 0);
}

// A context's profile counts its own runs only. The compile cache loads one library per generated
// file for the whole process, and its counters outlive a context: a second context compiling the
// same routine (or one alive beside it on the same thread) must not count the other's calls.
TEST(KernelProfile, AContextCountsOnlyItsOwnRunsOfALibraryOthersRanToo) {
  Overrides on("true");
  auto calls_of_first_kernel = [](const Context& ctx) {
    const std::vector<KernelProfileRow> rows = ctx.kernel_profile();
    EXPECT_FALSE(rows.empty());
    std::int64_t calls = -1;
    for (const KernelProfileRow& r : rows)
      if (r.routine == "shared_grad" && r.kernel == 0) calls = r.calls;
    return calls;
  };
  auto earlier = Context::cpu();
  auto earlier_grad = compile_grad(earlier, "shared_grad");
  for (int k = 0; k < 3; ++k) earlier.run(earlier_grad);
  auto later = Context::cpu();
  auto later_grad = compile_grad(later, "shared_grad");
  later.run(later_grad);
  earlier.run(earlier_grad);
  later.run(later_grad);
  EXPECT_EQ(calls_of_first_kernel(earlier), 4);
  EXPECT_EQ(calls_of_first_kernel(later), 2);
}

KernelProfileRow row(const std::string& routine, int kernel, std::int64_t calls, std::int64_t ns) {
  return {routine, kernel, "loop 8 -> y", routine + ".c:" + std::to_string(10 + kernel), calls, ns, 4, 8'000'000};
}

TEST(KernelProfile, RowDerivedFigures) {
  const KernelProfileRow r = row("step", 0, 4, 2'000'000);
  EXPECT_DOUBLE_EQ(r.total_ms(), 2.0);
  EXPECT_DOUBLE_EQ(r.mean_us(), 500.0);
  EXPECT_DOUBLE_EQ(r.share_percent(), 25.0);
  EXPECT_DOUBLE_EQ(row("step", 0, 0, 0).mean_us(), 0.0);
}

TEST(KernelProfile, SortedByTotalThenRoutineAndIndex) {
  const auto rows = runtime::sorted_by_total({row("b", 0, 1, 5), row("a", 1, 1, 9), row("a", 0, 1, 5)});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].total_ns, 9);
  EXPECT_EQ(rows[1].routine, "a");
  EXPECT_EQ(rows[2].routine, "b");
}

TEST(KernelProfile, TsvAndSummaryFormats) {
  const std::vector<KernelProfileRow> rows{row("step", 2, 4, 2'000'000), row("step", 0, 4, 1'000'000)};
  EXPECT_EQ(runtime::kernel_profile_tsv(rows),
            "routine\tkernel\tlabel\tsource\tcalls\ttotal_ms\tmean_us\tshare_pct\n"
            "step\t2\tloop 8 -> y\tstep.c:12\t4\t2.000\t500.000\t25.00\n"
            "step\t0\tloop 8 -> y\tstep.c:10\t4\t1.000\t250.000\t12.50\n");
  const std::string top1 = runtime::kernel_profile_summary(rows, 1);
  EXPECT_NE(top1.find("step#2  loop 8 -> y  (step.c:12)"), std::string::npos) << top1;
  EXPECT_EQ(top1.find("step#0"), std::string::npos) << "more rows than asked for";
  EXPECT_EQ(runtime::kernel_profile_summary({}, 10), "");
}

}  // namespace
}  // namespace cannl::testing
