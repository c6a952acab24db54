// Kernel timing in generated C (CpuCodegenOptions::profile_kernels): one timed kernel per
// top-level statement, labels, source lines that point at each kernel, and no trace when off.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "cannl/cannl.h"
#include "cannl/codegen/c_codegen.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl {
namespace {

using namespace cannl::ir;

// forward: s := 0; s[i] += m[i, j] over {4, 8}; then (a second block) t[i] := 2 s[i].
LoweredRoutine two_blocks(const NodeRef& m, const NodeRef& s, const NodeRef& t) {
  const Symbol i = fresh_symbol(), j = fresh_symbol(), k = fresh_symbol();
  const std::vector<AxisIndex> si{AxisIndex::iterator(i)}, mij{si[0], AxisIndex::iterator(j)};
  auto acc = apply(Op::Add, DType::F32, {get(s, si), get(m, mij)});
  auto reduce = for_loop(i, 0, 4, for_loop(j, 0, 8, set(s, si, acc, "s =+ m")));
  const std::vector<AxisIndex> tk{AxisIndex::iterator(k)};
  auto twice = apply(Op::Mul, DType::F32, {get(s, tk), constant(2, DType::F32)});
  auto scale = for_loop(k, 0, 4, set(t, tk, twice, "t =: 2 * s"));
  return {"two_blocks", seq({seq({comment("forward"), zero_out(s), reduce}), seq({comment("scale"), scale})}), {}};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The numbers of the generated `cannl_kernel_lines` array.
std::vector<int> kernel_lines(const std::string& text) {
  const auto open = text.find("cannl_kernel_lines[] = {");
  const auto close = text.find("};", open);
  std::vector<int> out;
  const std::string body = text.substr(open, close - open);
  static const std::regex number("\\n *([0-9]+),");
  for (std::sregex_iterator it(body.begin(), body.end(), number), end; it != end; ++it)
    out.push_back(std::stoi((*it)[1]));
  return out;
}

struct Nodes {
  NodeRef m = make_node("m", DType::F32, {4, 8});
  NodeRef s = make_node("s", DType::F32, {4});
  NodeRef t = make_node("t", DType::F32, {4});
};

TEST(KernelProfileCodegen, OffLeavesNoTrace) {
  Nodes n;
  const auto src = codegen::emit_c(two_blocks(n.m, n.s, n.t), {n.m, n.s, n.t});
  EXPECT_TRUE(src.profile_symbol.empty());
  EXPECT_EQ(src.text.find("cannl_profile"), std::string::npos);
  EXPECT_EQ(src.text.find("clock_gettime"), std::string::npos);
}

TEST(KernelProfileCodegen, OneTimedKernelPerTopLevelStatement) {
  Nodes n;
  const auto src = codegen::emit_c(two_blocks(n.m, n.s, n.t), {n.m, n.s, n.t}, {.profile_kernels = true});
  EXPECT_EQ(src.profile_symbol, "cannl_profile_two_blocks");
  EXPECT_NE(src.text.find("const cannl_kernel_profile *cannl_profile_two_blocks(void) {"), std::string::npos);
  // memset, the reduction nest and the scaling loop; the block comments are not kernels.
  for (int k = 0; k < 3; ++k)
    EXPECT_NE(src.text.find("cannl_profile_lap(" + std::to_string(k) + ", &cannl_profile_t);"), std::string::npos) << k;
  EXPECT_EQ(src.text.find("cannl_profile_lap(3,"), std::string::npos);
  EXPECT_NE(src.text.find("table = (cannl_kernel_profile){3, "), std::string::npos);
  // Per thread: devices sharing the loaded library run it at once (CcProfile tests the counts).
  EXPECT_NE(src.text.find("static _Thread_local int64_t cannl_kernel_calls[3];"), std::string::npos);
}

TEST(KernelProfileCodegen, LabelsNameSectionShapeAndWrites) {
  Nodes n;
  const auto src = codegen::emit_c(two_blocks(n.m, n.s, n.t), {n.m, n.s, n.t}, {.profile_kernels = true});
  EXPECT_NE(src.text.find("\"forward: memset -> s\",\n"), std::string::npos) << src.text;
  EXPECT_NE(src.text.find("\"forward: loop 4x8 -> s (s =+ m)\",\n"), std::string::npos);
  EXPECT_NE(src.text.find("\"scale: loop 4 -> t (t =: 2 * s)\",\n"), std::string::npos);
}

TEST(KernelProfileCodegen, SourceLinesPointAtEachKernel) {
  Nodes n;
  const auto src = codegen::emit_c(two_blocks(n.m, n.s, n.t), {n.m, n.s, n.t}, {.profile_kernels = true});
  const std::vector<std::string> lines = lines_of(src.text);
  const std::vector<int> at = kernel_lines(src.text);
  ASSERT_EQ(at.size(), 3u);
  EXPECT_EQ(lines.at(at[0] - 1), "  memset(s, 0, 16);");
  EXPECT_EQ(lines.at(at[1] - 1).rfind("  for (int64_t i0 = 0; i0 < 4;", 0), 0u) << lines.at(at[1] - 1);
  EXPECT_EQ(lines.at(at[2] - 1).rfind("  for (int64_t i2 = 0; i2 < 4;", 0), 0u) << lines.at(at[2] - 1);
  // The line before each kernel closes the previous one's timing (or starts the clock).
  EXPECT_EQ(lines.at(at[1] - 2), "  cannl_profile_lap(0, &cannl_profile_t);");
}

TEST(KernelProfileCodegen, BodyMatchesTheUnprofiledOneBetweenTimingCalls) {
  Nodes n;
  const auto routine = two_blocks(n.m, n.s, n.t);
  const auto plain = codegen::emit_c(routine, {n.m, n.s, n.t});
  const auto timed = codegen::emit_c(routine, {n.m, n.s, n.t}, {.profile_kernels = true});
  auto function = [](const std::string& text) {
    const auto start = text.find("\nstatic int two_blocks(");
    return text.substr(start, text.find("\n}\n", start) - start);
  };
  static const std::regex timing("\n  (int64_t cannl_profile_t = cannl_profile_now\\(\\)|cannl_profile_lap\\([0-9]+, &cannl_profile_t\\));");
  EXPECT_EQ(std::regex_replace(function(timed.text), timing, ""), function(plain.text));
}

TEST(KernelProfileCodegen, LabelsAreSafeCStrings) {
  auto x = make_node("x", DType::F32, {2});
  const Symbol i = fresh_symbol();
  auto body = seq({comment("say \"hi\" \\ ?" "?="),
                   for_loop(i, 0, 2, set(x, {AxisIndex::iterator(i)}, constant(1, DType::F32)))});
  const auto src = codegen::emit_c({"quoted", body, {}}, {x}, {.profile_kernels = true});
  EXPECT_NE(src.text.find("\"say \\\"hi\\\" \\\\ \\?\\?=: loop 2 -> x\""), std::string::npos) << src.text;
}

TEST(KernelProfileCodegen, MatmulTileLabelGivesItsShape) {
  struct Overrides {
    Overrides() {
      config::set_override("profile_kernels", "true");
      config::set_override("cc_vector_bytes", "64");
      config::set_override("cc_parallel_grid", "none");
      config::set_override("automatic_cpu_schedule", "true");
    }
    ~Overrides() { config::clear_overrides(); }
  } overrides;
  runtime::Context ctx = [] {
    try {
      return runtime::Context::cpu();
    } catch (const BackendUnavailable&) {
      return runtime::Context::interpreter();
    }
  }();
  if (ctx.backend_name() != "cc") GTEST_SKIP() << "no C compiler";
  // y[b, o] = sum_i w[o, i] x[b, i]: 256 x 128 x 192 (the output node is named "matmul").
  using Dims = std::vector<std::int64_t>;
  Tensor x = literal("x", std::vector<double>(256 * 192, 1.0), {.batch = Dims{256}, .output = Dims{192}});
  Tensor w = literal("w", std::vector<double>(128 * 192, 1.0), {.input = Dims{192}, .output = Dims{128}});
  Tensor y = w * x;
  train::upload_literals(ctx, {y});
  const std::string source = train::compile_forward(ctx, {y}, "profiled_matmul").source();
  // One tile over every row; the zeroing of its output is the tile's (zero start), not a memset.
  EXPECT_NE(source.find("\"forward: matmul tile 256x128x192 -> matmul\""), std::string::npos) << source;
  EXPECT_EQ(source.find("\"forward: memset -> matmul\""), std::string::npos) << source;
}

}  // namespace
}  // namespace cannl
