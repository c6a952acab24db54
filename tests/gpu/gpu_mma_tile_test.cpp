// Tensor-core matmul tiles (ir::TileBlocking::mma, codegen/gpu/mma_tile_printer.cpp) run end to
// end on the GPU backend. On OpenCL (PoCL in CI) the warp-level instructions are the emulation
// of mma_helpers.h, generated from the PTX ISA's fragment tables, so these runs check the
// printer's index arithmetic (staging layouts, ldmatrix row addresses with and without .trans,
// fragment registers, accumulator cells, edge guards, zero start and accumulation into d) for
// bf16, f16 and tf32; on CUDA (CANNL_TEST_GPU_BACKEND=cuda) they run on the tensor cores.
//  * Small integers: every product and sum is exact in f32, so any order of the steps gives the
//    interpreter's values: plain and transposed operands in each format, and a convolution whose
//    loops fold into the tile.
//  * A bf16-policy matmul built from tensors (the policy's rounded copies are what licenses the
//    tensor cores): within a tolerance of the interpreter's f32 sums.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "../interp/test_memory.h"
#include "backends/run_util.h"
#include "cannl/cannl.h"
#include "cannl/interp/interpreter.h"
#include "cannl/ir/target.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "gpu/gpu_test_util.h"
#include "gpu/tile_test_util.h"
#include "schedule/schedule_test_util.h"

namespace cannl {
namespace {

using ir::DType;
using ir::NarrowFormat;
using schedule::testing::it;

// Integers in [-4, 4] (and some -0), reproducible per node: exact in bf16, f16 and tf32.
std::vector<float> small_integers(const ir::NodeRef& n) {
  std::vector<float> out(static_cast<std::size_t>(n->num_elements()));
  std::uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(n->id + 1);
  for (auto& v : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = static_cast<float>(static_cast<int>(x % 9) - 4);
  }
  return out;
}

// The GPU's target, tiles of any size blocked, and tensor cores for every format: the backend's
// own on CUDA; on OpenCL the emulation, which a backend's target never asks for.
ir::Target mma_target(const backends::Backend& gpu) {
  ir::Target t = gpu.target();
  t.min_tile_work = 1;
  t.gpu_mma_formats = {NarrowFormat::BF16, NarrowFormat::F16, NarrowFormat::TF32};
  t.gpu.warp_size = ir::TileBlocking::kWarpLanes;
  t.gpu_mma_tile = {32, 32, 16, 16, 16};  // 4 warps: several blocks and warps in every case
  return t;
}

struct Case {
  std::int64_t m, n, k;
  bool a_t = false, b_t = false, zero_first = false;
  NarrowFormat format = NarrowFormat::BF16;
};

std::string describe(const Case& c) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + (c.a_t ? " a^T" : "") +
         (c.b_t ? " b^T" : "") + (c.zero_first ? " zero start" : "") + " " +
         std::string(ir::narrow_format_name(c.format));
}

// d[i, j] += a[i, k] * b[k, j] tensorized, a and b stored transposed when asked and promised
// exact in the case's format; d zeroed first when asked.
ir::LoweredRoutine matmul(const Case& c) {
  const ir::NodeRef a = ir::make_node("a", DType::F32, c.a_t ? std::vector<std::int64_t>{c.k, c.m} : std::vector<std::int64_t>{c.m, c.k});
  const ir::NodeRef b = ir::make_node("b", DType::F32, c.b_t ? std::vector<std::int64_t>{c.n, c.k} : std::vector<std::int64_t>{c.k, c.n});
  const ir::NodeRef d = ir::make_node("d", DType::F32, {c.m, c.n});
  a->rounded_to = b->rounded_to = c.format;
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto ga = ir::get(a, c.a_t ? std::vector{it(k), it(i)} : std::vector{it(i), it(k)});
  const auto gb = ir::get(b, c.b_t ? std::vector{it(j), it(k)} : std::vector{it(k), it(j)});
  const auto gd = ir::get(d, {it(i), it(j)});
  const auto value = ir::apply(ir::Op::Add, DType::F32, {gd, ir::apply(ir::Op::Mul, DType::F32, {ga, gb})});
  const auto nest = ir::for_loop(i, 0, c.m, ir::for_loop(j, 0, c.n, ir::for_loop(k, 0, c.k, ir::set(d, {it(i), it(j)}, value))));
  const ir::LoweredRoutine r{"mma_matmul", c.zero_first ? ir::seq({ir::zero_out(d), nest}) : nest, {}};
  return schedule::apply(r, schedule::Tensorize{i, j, k});
}

int tensor_core_tiles(const ir::LoweredRoutine& r) {
  int n = 0;
  ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
    const auto* t = std::get_if<ir::TileMma>(&s.node);
    n += t != nullptr && t->blocking.tensor_cores() ? 1 : 0;
  });
  return n;
}

// The bytes of every param after running `r` on the interpreter from small_integers.
std::vector<test_util::Bytes> interpreted(const ir::LoweredRoutine& r, const std::vector<ir::NodeRef>& params) {
  return gpu_test::interpreted(r, params, small_integers);
}

// The f32 values of a buffer's bytes. Compared as values: a tensor core may give the sign of an
// exact zero sum otherwise than the interpreter's order of additions.
std::vector<float> floats_of(const test_util::Bytes& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

TEST(GpuMmaTile, ExactSumsAreTheInterpretersValuesInEveryLayoutAndFormat) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const ir::Target t = mma_target(*gpu);
  // Plain operands stage A along the steps (ldmatrix) and B along the columns (ldmatrix.trans);
  // transposed ones the other way round. Sizes leave partial blocks, warps and slices.
  for (const Case& c : {Case{17, 33, 65}, Case{17, 33, 40, true, true, true, NarrowFormat::F16},
                        Case{33, 20, 21, false, false, false, NarrowFormat::TF32},
                        Case{20, 33, 21, true, true, true, NarrowFormat::TF32}}) {
    SCOPED_TRACE(describe(c));
    const ir::LoweredRoutine r = matmul(c);
    ASSERT_EQ(tensor_core_tiles(schedule::lower_for_target(r, t)), 1) << ir::print_loop_ir(r);
    const auto params = ir::nodes_of(r.body);
    std::vector<test_util::Bytes> inputs;
    for (const auto& n : params) inputs.push_back(test_util::bytes_of(small_integers(n)));
    const auto got = test_util::run_on(*gpu, {r, params, t}, inputs);
    const auto expected = interpreted(r, params);
    for (std::size_t q = 0; q < params.size(); ++q) EXPECT_EQ(floats_of(got[q]), floats_of(expected[q])) << params[q]->debug_name();
  }
}

// tf32 tiles stage the f32 bits unconverted: pipelined (TileBlocking::async_copy) on the OpenCL
// emulation of cp.async, the values stay the interpreter's: 16-byte copies along the cells (b;
// a^T) and along the steps (b^T of 24 steps), 4-byte ones (a of 21 steps), partial blocks and
// slices, zero start. bf16 tiles convert while staging and keep the registers' path.
TEST(GpuMmaTile, Tf32TilesPipelineTheirStaging) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  ir::Target t = mma_target(*gpu);
  t.gpu_async_copy = true;
  const auto pipelined = [](const ir::LoweredRoutine& r) {
    int n = 0;
    ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
      const auto* x = std::get_if<ir::TileMma>(&s.node);
      n += x != nullptr && x->blocking.async_copy ? 1 : 0;
    });
    return n;
  };
  EXPECT_EQ(pipelined(schedule::lower_for_target(matmul({17, 33, 65}), t)), 0);  // bf16
  for (const Case& c : {Case{33, 20, 21, false, false, false, NarrowFormat::TF32},
                        Case{20, 36, 24, true, true, true, NarrowFormat::TF32}}) {
    SCOPED_TRACE(describe(c));
    const ir::LoweredRoutine r = matmul(c);
    ASSERT_EQ(pipelined(schedule::lower_for_target(r, t)), 1) << ir::print_loop_ir(r);
    const auto params = ir::nodes_of(r.body);
    std::vector<test_util::Bytes> inputs;
    for (const auto& n : params) inputs.push_back(test_util::bytes_of(small_integers(n)));
    const auto got = test_util::run_on(*gpu, {r, params, t}, inputs);
    const auto expected = interpreted(r, params);
    for (std::size_t q = 0; q < params.size(); ++q) EXPECT_EQ(floats_of(got[q]), floats_of(expected[q])) << params[q]->debug_name();
  }
}

// y[n, oh, ow, f] += x[n, oh + kh, ow + kw, c] * w[kh, kw, c, f] with its loops folded into one
// tile (rows n, oh, ow; columns f; steps kh, kw, c): the staging's index arithmetic gathers the
// implicit im2col for the tensor cores as for the scalar tile.
TEST(GpuMmaTile, AFoldedConvolutionRunsOnTensorCores) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const std::int64_t batch = 2, h = 5, ww = 4, c = 3, f = 20, kh = 3, kw = 2;
  const ir::NodeRef x = ir::make_node("x", DType::F32, {batch, h + kh - 1, ww + kw - 1, c});
  const ir::NodeRef w = ir::make_node("w", DType::F32, {kh, kw, c, f});
  const ir::NodeRef y = ir::make_node("y", DType::F32, {batch, h, ww, f});
  x->rounded_to = w->rounded_to = NarrowFormat::BF16;
  ir::Symbol s[7];
  for (auto& v : s) v = ir::fresh_symbol();
  const auto sum = [](ir::Symbol p, ir::Symbol q) { return ir::AxisIndex{{{1, p}, {1, q}}, 0}; };
  const auto yi = std::vector{it(s[0]), it(s[1]), it(s[2]), it(s[3])};
  const auto value = ir::apply(
      ir::Op::Add, DType::F32,
      {ir::get(y, yi), ir::apply(ir::Op::Mul, DType::F32,
                                 {ir::get(x, {it(s[0]), sum(s[1], s[4]), sum(s[2], s[5]), it(s[6])}),
                                  ir::get(w, {it(s[4]), it(s[5]), it(s[6]), it(s[3])})})});
  ir::StmtRef nest = ir::set(y, yi, value);
  const std::int64_t extents[7] = {batch, h, ww, f, kh, kw, c};
  for (int q = 6; q >= 0; --q) nest = ir::for_loop(s[q], 0, extents[q], nest);
  const ir::LoweredRoutine r{"mma_conv", nest, {}};
  const ir::Target t = mma_target(*gpu);
  const ir::LoweredRoutine scheduled = schedule::default_gpu_schedule(r, {.target = t});
  const ir::LoweredRoutine lowered = schedule::lower_for_target(scheduled, t);
  ASSERT_EQ(tensor_core_tiles(lowered), 1) << ir::print_loop_ir(lowered);
  bool folded = false;
  ir::for_each_stmt(lowered.body, [&](const ir::Stmt& q) {
    if (const auto* tile = std::get_if<ir::TileMma>(&q.node)) folded = tile->folded();
  });
  EXPECT_TRUE(folded) << ir::print_loop_ir(lowered);
  const auto params = ir::nodes_of(r.body);
  std::vector<test_util::Bytes> inputs;
  for (const auto& n : params) inputs.push_back(test_util::bytes_of(small_integers(n)));
  const auto got = test_util::run_on(*gpu, {scheduled, params, t}, inputs);
  const auto expected = interpreted(r, params);
  for (std::size_t q = 0; q < params.size(); ++q) EXPECT_EQ(floats_of(got[q]), floats_of(expected[q])) << params[q]->debug_name();
}

// gpu_tensor_cores takes auto or off; the gpu_mma_* keys replace the device's blocking sizes
// and must make whole MMA tiles per warp.
TEST(GpuMmaTile, ItsConfigKeysAreChecked) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  test_util::ConfigGuard guard;
  config::set_override("gpu_tensor_cores", "on");
  try {
    (void)gpu->target();
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("expected auto or off"), std::string::npos) << e.what();
  }
  config::set_override("gpu_tensor_cores", "off");
  EXPECT_TRUE(gpu->target().gpu_mma_formats.empty());
  config::set_override("gpu_mma_bm", "64");
  config::set_override("gpu_mma_wm", "32");
  EXPECT_EQ(gpu->target().gpu_mma_tile.bm, 64);
  EXPECT_EQ(gpu->target().gpu_mma_tile.tm, 32);
  config::set_override("gpu_mma_wn", "24");
  EXPECT_THROW((void)gpu->target(), ConfigError);
}

TEST(GpuMmaTile, TheKernelNamesItsMmaInstruction) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  if (!gpu_test::prints_kernels()) GTEST_SKIP() << "the " << gpu->name() << " backend prints no instructions";
  const ir::LoweredRoutine r = matmul({40, 24, 16});
  const auto params = ir::nodes_of(r.body);
  const auto exe = gpu->compile({r, params, mma_target(*gpu)});
  const std::string source = exe->source();
  EXPECT_NE(source.find("on tensor cores: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), std::string::npos)
      << source;
  EXPECT_NE(source.find("cannl_ldsm_x4"), std::string::npos) << source;
}

// y = w * x under the bf16 policy (x: rows x inner, w: inner -> cols), compiled from tensors
// for `target` (unset: the backend's own) and run: y's values and how many of the routine's
// tiles ran on tensor cores.
std::pair<std::vector<double>, int> bf16_product(runtime::Context ctx, std::optional<ir::Target> target,
                                                 std::int64_t rows, std::int64_t inner, std::int64_t cols) {
  const auto values = [](std::int64_t n, double scale) {
    std::vector<double> v;
    for (std::int64_t q = 0; q < n; ++q) v.push_back(scale * std::sin(0.37 * static_cast<double>(q) + 0.1));
    return v;
  };
  reset_tensor_state();
  Tensor y;
  {
    PrecisionScope scope(PrecisionPolicy{MatmulPrecision::BF16});
    using Dims = std::vector<std::int64_t>;
    const Tensor x = literal("x", values(rows * inner, 1.0), {.batch = Dims{rows}, .input = Dims{}, .output = Dims{inner}});
    const Tensor w = literal("w", values(inner * cols, 0.5), {.batch = Dims{}, .input = Dims{inner}, .output = Dims{cols}});
    y = w * x;
  }
  train::upload_literals(ctx, {y});
  runtime::CompileOptions options;
  options.target = std::move(target);
  auto routine = ctx.compile(forward_code({y}), "bf16_matmul", options);
  ctx.run(routine);
  return {ctx.get_values(y.value()), tensor_core_tiles(routine.lowered())};
}

// Both sum the same exact products of bf16 values in f32, in different orders: a few f32 ulps of
// the magnitudes summed (|x| <= 1, |w| <= 0.5).
void expect_close_sums(const std::vector<double>& got, const std::vector<double>& expected, std::int64_t inner) {
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t q = 0; q < got.size(); ++q)
    ASSERT_NEAR(got[q], expected[q], 1e-5 * static_cast<double>(inner)) << "cell " << q;
}

// y = w * x under the bf16 policy, compiled from tensors with the tensor cores allowed: the tile
// reads the policy's rounded copies, runs on (emulated) tensor cores, and its sums stay within
// a tolerance of the interpreter's.
TEST(GpuMmaTile, ABf16PolicyMatmulRunsOnTensorCoresWithinTolerance) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const std::int64_t rows = 48, inner = 72, cols = 40;
  const auto [expected, unused] = bf16_product(runtime::Context::interpreter(), std::nullopt, rows, inner, cols);
  (void)unused;
  const auto [got, tiles] = bf16_product(runtime::Context(gpu), mma_target(*gpu), rows, inner, cols);
  EXPECT_EQ(tiles, 1) << "the product of the rounded copies runs on tensor cores";
  expect_close_sums(got, expected, inner);
  if (gpu->target().gpu_mma_formats.empty()) {
    // The backend's own target keeps the scalar tile (whose CUDA form cuda_compile_check
    // compiles as a CUDA device would run it: on tensor cores, for sm_90 and sm_80).
    const auto [scalar, none] = bf16_product(runtime::Context(gpu), std::nullopt, rows, inner, cols);
    EXPECT_EQ(none, 0);
    expect_close_sums(scalar, expected, inner);
  }
}

// On a backend whose own target has tensor cores (CUDA sm_80 and later), a bf16-policy product
// takes them with the default blocking; the acceptance run on a GPU checks it against the
// interpreter.
TEST(GpuMmaTile, TheBackendsOwnTargetRunsBf16ProductsOnTensorCores) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  if (gpu->target().gpu_mma_formats.empty())
    GTEST_SKIP() << "the " << gpu->name() << " backend's target has no tensor cores (CUDA sm_80 and later have)";
  const std::int64_t rows = 256, inner = 320, cols = 192;
  const auto [expected, unused] = bf16_product(runtime::Context::interpreter(), std::nullopt, rows, inner, cols);
  (void)unused;
  const auto [got, tiles] = bf16_product(runtime::Context(gpu), std::nullopt, rows, inner, cols);
  EXPECT_EQ(tiles, 1);
  expect_close_sums(got, expected, inner);
}

}  // namespace
}  // namespace cannl
