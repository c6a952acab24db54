// Routines compiled as several translation units (codegen::emit_c_split, cc::load_or_compile_units):
// equal kernels are one function, results are bitwise those of the single file, a fully cached
// routine runs no compiler, and a changed kernel recompiles its own unit, not the others.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <random>
#include <set>

#include "backends/run_util.h"
#include "cannl/backends/cc_backend.h"
#include "cannl/codegen/c_codegen.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/support/config.h"

namespace cannl {
namespace {

using namespace ir;
using test_util::Bytes;

constexpr std::int64_t kRows = 256, kCols = 256;  // a layer's loop: hot (65536 iterations)

// A salt no earlier run of this test has compiled (the compile cache outlives the process).
double fresh_salt() {
  std::random_device rd;
  const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return static_cast<double>((now ^ rd()) % 1000003) / 1000003.0;
}

// `layers` layers: h[k+1][i, j] = h[k][i, j] * 1.5 + salt(k) over [kRows, kCols] (hot), then
// s[k][j] = h[k+1][0, j] + `add` (cold). Layers of equal salt run equal kernels on other nodes.
// Params: h[0..layers], then s[0..layers-1].
backends::CompileRequest layered(const std::string& name, int layers, const std::function<double(int)>& salt,
                                 double add = 1) {
  std::vector<NodeRef> h, s;
  for (int k = 0; k <= layers; ++k) h.push_back(make_node("h" + std::to_string(k), DType::F32, {kRows, kCols}));
  for (int k = 0; k < layers; ++k) s.push_back(make_node("s" + std::to_string(k), DType::F32, {kCols}));
  std::vector<StmtRef> body;
  for (int k = 0; k < layers; ++k) {
    const Symbol i = fresh_symbol(), j = fresh_symbol(), c = fresh_symbol();
    const std::vector<AxisIndex> ij{AxisIndex::iterator(i), AxisIndex::iterator(j)};
    auto value = apply(Op::Add, DType::F32,
                       {apply(Op::Mul, DType::F32, {get(h[k], ij), constant(1.5, DType::F32)}),
                        constant(salt(k), DType::F32)});
    body.push_back(comment("layer " + std::to_string(k)));
    body.push_back(for_loop(i, 0, kRows, for_loop(j, 0, kCols, set(h[k + 1], ij, value, "layer"))));
    const std::vector<AxisIndex> row0{AxisIndex::fixed(0), AxisIndex::iterator(c)};
    body.push_back(for_loop(c, 0, kCols,
                            set(s[k], {AxisIndex::iterator(c)},
                                apply(Op::Add, DType::F32, {get(h[k + 1], row0), constant(add, DType::F32)}))));
  }
  std::vector<NodeRef> params = h;
  params.insert(params.end(), s.begin(), s.end());
  return {LoweredRoutine{name, seq(body), {}}, params};
}

std::vector<Bytes> run(const backends::CompileRequest& request) {
  std::vector<float> x(static_cast<std::size_t>(kRows * kCols));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2, 2);
  for (auto& v : x) v = u(rng);
  return test_util::run_on(*test_util::cc(), request, {test_util::bytes_of(x)});
}

// What the backend prints for `r` (after the same lowering).
codegen::SplitSource split_of(const backends::CompileRequest& r, std::size_t unit_lines = 250) {
  const ir::Target target = test_util::cc()->target();
  return codegen::emit_c_split(schedule::lower_for_target(r.routine, target), r.params, {.target = target},
                               {.unit_lines = unit_lines});
}

TEST(CcSplit, EqualKernelsAreOneFunction) {
  const auto request = layered("split_dedupe", 12, [](int k) { return 0.25 * (k % 3); });
  const codegen::SplitSource split = split_of(request);
  EXPECT_EQ(split.kernels, 24);
  EXPECT_EQ(split.unique_kernels, 4);  // three salts, and the row copy of every layer
  std::set<std::string> defined;
  for (const auto& unit : split.units) {
    for (std::size_t at = unit.text.find("int cannl_k_"); at != std::string::npos;
         at = unit.text.find("int cannl_k_", at + 1)) {
      const std::size_t end = unit.text.find('(', at);
      if (unit.text.find(';', at) > unit.text.find('{', at)) defined.insert(unit.text.substr(at, end - at));
    }
  }
  EXPECT_EQ(defined.size(), 4u);
  // The main unit calls each of them once per layer, with the layer's own buffers.
  EXPECT_NE(split.units.front().text.find("(h12, h11)"), std::string::npos);
}

TEST(CcSplit, HotKernelsAndColdOnesAreInUnitsOfTheirOwn) {
  const codegen::SplitSource split = split_of(layered("split_hot", 4, [](int k) { return k; }));
  ASSERT_GE(split.units.size(), 3u);
  EXPECT_FALSE(split.units.front().hot);  // the main unit
  bool hot = false, cold = false;
  for (std::size_t u = 1; u < split.units.size(); ++u) {
    const bool layers = split.units[u].text.find("loop 256x256") != std::string::npos;
    EXPECT_EQ(split.units[u].hot, layers) << split.units[u].name;
    (split.units[u].hot ? hot : cold) = true;
  }
  EXPECT_TRUE(hot && cold);
}

TEST(CcSplit, AMainUnitWithoutLoopsIsPlain) {
  // Every loop a kernel, plus a scalar store left in the main unit: nothing to optimize there.
  auto request = layered("split_plain", 2, [](int k) { return k; });
  const NodeRef total = make_node("total", DType::F32, {1});
  const std::vector<AxisIndex> cell{AxisIndex::fixed(0)};
  auto with_scalar = flatten_seq(request.routine.body);
  with_scalar.push_back(set(total, cell, apply(Op::Add, DType::F32, {get(total, cell), get(request.params[3], cell)})));
  request.routine.body = seq(with_scalar);
  request.params.push_back(total);
  const codegen::SplitSource split = split_of(request);
  EXPECT_TRUE(split.units.front().plain);
  for (std::size_t u = 1; u < split.units.size(); ++u) EXPECT_FALSE(split.units[u].plain) << split.units[u].name;

  // A loop reading a scalar local declared outside it is no kernel: it stays in the main unit,
  // which then needs the optimizer.
  const int local = fresh_scope_id();
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::fixed(0), AxisIndex::iterator(i)};
  auto second = layered("split_not_plain", 2, [](int k) { return k; });
  const NodeRef h1 = second.params[1];
  auto with_loop = flatten_seq(second.routine.body);
  with_loop.push_back(declare_local(local, DType::F32, false));
  with_loop.push_back(set_local(local, constant(2, DType::F32)));
  with_loop.push_back(
      for_loop(i, 0, kCols, set(h1, at, apply(Op::Mul, DType::F32, {get(h1, at), get_local(local, DType::F32)}))));
  second.routine.body = seq(with_loop);
  EXPECT_FALSE(split_of(second).units.front().plain);
}

TEST(CcSplit, ResultsAreBitwiseThoseOfTheSingleFile) {
  test_util::ConfigGuard guard;
  const double base = fresh_salt();
  const auto request = layered("split_bitwise", 10, [&](int k) { return base + 0.5 * (k % 4); });
  ASSERT_GE(split_of(request).units.size(), 2u);
  const int before = backends::cc::compiler_invocations();
  const std::vector<Bytes> split = run(request);
  EXPECT_GT(backends::cc::compiler_invocations(), before + 2);  // units and the link
  config::set_override("cc_split", "false");
  const int single_before = backends::cc::compiler_invocations();
  const std::vector<Bytes> single = run(request);
  EXPECT_EQ(backends::cc::compiler_invocations(), single_before + 1);
  ASSERT_EQ(split.size(), single.size());
  for (std::size_t k = 0; k < split.size(); ++k) EXPECT_EQ(split[k], single[k]) << "buffer " << k;
}

TEST(CcSplit, CachedRoutineRunsNoCompiler) {
  test_util::ConfigGuard guard;
  const double base = fresh_salt();
  const auto request = layered("split_cached", 8, [&](int k) { return base + k; });
  run(request);
  const int before = backends::cc::compiler_invocations();
  run(request);
  EXPECT_EQ(backends::cc::compiler_invocations(), before);
}

TEST(CcSplit, ChangedKernelRecompilesItsUnitAndTheMainOneOnly) {
  test_util::ConfigGuard guard;
  config::set_override("cc_split_unit_lines", "10");  // about one kernel per unit
  // Group boundaries are content-defined (a kernel's digest), so a salt may give fewer groups:
  // salts are drawn until the routine splits into at least 5 units.
  double base = fresh_salt();
  auto routine = [&](double change) {
    return layered("split_change", 12, [&](int k) { return base + k + (k == 6 ? change : 0); }, base);
  };
  for (int attempt = 0; attempt < 64 && split_of(routine(0), 10).units.size() < 5; ++attempt) base = fresh_salt();
  const auto first = routine(0), second = routine(100);
  const codegen::SplitSource a = split_of(first, 10), b = split_of(second, 10);
  ASSERT_GE(a.units.size(), 5u);
  std::set<std::string> old_texts;
  for (const auto& u : a.units) old_texts.insert(u.text);
  std::size_t changed = 0;
  for (const auto& u : b.units) changed += old_texts.contains(u.text) ? 0 : 1;
  // The main unit (it calls another function) and the changed kernel's group, or two groups
  // when the change moved a group boundary.
  EXPECT_GE(changed, 2u);
  EXPECT_LE(changed, 3u);

  const int before = backends::cc::compiler_invocations();
  run(first);
  EXPECT_EQ(backends::cc::compiler_invocations(), before + static_cast<int>(a.units.size()) + 1);
  const int again = backends::cc::compiler_invocations();
  run(second);
  EXPECT_EQ(backends::cc::compiler_invocations(), again + static_cast<int>(changed) + 1);  // + the link
}

TEST(CcSplit, ProfiledRoutineTimesEveryKernelAtItsCall) {
  test_util::ConfigGuard guard;
  config::set_override("profile_kernels", "true");
  const double base = fresh_salt();
  const auto request = layered("split_profiled", 6, [&](int k) { return base + k % 2; });
  auto exe = test_util::cc()->compile(request);
  std::vector<std::unique_ptr<backends::Buffer>> owned;
  std::vector<backends::Buffer*> buffers;
  for (const auto& n : request.params) {
    owned.push_back(test_util::cc()->allocate(n->size_in_bytes()));
    buffers.push_back(owned.back().get());
  }
  exe->run(buffers, {});
  const auto timings = exe->kernel_timings();
  ASSERT_EQ(timings.size(), 12u);  // two loops per layer; the comments are no kernels
  std::vector<std::string> lines{""};
  for (char c : exe->source()) {
    if (c == '\n') lines.emplace_back();
    else lines.back() += c;
  }
  for (const auto& t : timings) {
    EXPECT_EQ(t.calls, 1) << t.label;
    EXPECT_EQ(t.source_file, "split_profiled.c");
    ASSERT_LT(static_cast<std::size_t>(t.source_line), lines.size());
    EXPECT_EQ(lines[static_cast<std::size_t>(t.source_line) - 1].rfind("  /* loop ", 0), 0u) << t.label;
  }
}

}  // namespace
}  // namespace cannl
