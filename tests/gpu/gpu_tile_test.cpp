// Blocked matmul tiles on the GPU backend (ir::TileMma::blocking, codegen/gpu/tile_printer.cpp):
// staged in shared memory, register-blocked, each its own launch, and bitwise the interpreter's
// serial nest on inputs with full mantissas (so a changed order of steps, a fused multiply-add
// where the nest rounds twice or a lost -0 shows): edge sizes that leave partial blocks, rows
// and steps, transposed operands, accumulation into a non-zero output, a ZeroOut the tile
// absorbs, batched matmuls under Grid loops, a convolution whose loops fold into the tile, and
// the unfused form. Small blockings keep PoCL's work short and give every case several blocks.
// Pipelined staging (TileBlocking::async_copy) runs the same cases on the OpenCL emulation of
// cp.async (codegen/gpu/async_copy_helpers.h: copies done at the thread's wait, with the zero
// fill, NaN from a misaligned 16-byte copy), which checks the double-buffered loop's stages,
// index arithmetic and the order of copies, waits, barriers and reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "../interp/test_memory.h"
#include "backends/run_util.h"
#include "cannl/codegen/gpu_codegen.h"
#include "cannl/schedule/fission.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/interp/interpreter.h"
#include "cannl/ir/target.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/schedule/transforms.h"
#include "gpu/gpu_test_util.h"
#include "gpu/tile_test_util.h"
#include "schedule/schedule_test_util.h"

namespace cannl {
namespace {

using ir::DType;
using schedule::testing::it;

// Values with full 24-bit mantissas of both signs (one in 16 of them -0), reproducible per node.
std::vector<float> awkward_values(const ir::NodeRef& n) {
  std::vector<float> out(static_cast<std::size_t>(n->num_elements()));
  std::uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(n->id + 1);
  for (std::size_t k = 0; k < out.size(); ++k) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const float v = static_cast<float>(static_cast<double>(x % 2000003) / 1000001.0 - 1.0) * 1.3f;
    out[k] = k % 16 == 5 ? -0.0f : v;
  }
  return out;
}

// The bytes of every param after running `r` on the interpreter from awkward_values.
std::vector<test_util::Bytes> interpreted(const ir::LoweredRoutine& r, const std::vector<ir::NodeRef>& params) {
  return gpu_test::interpreted(r, params, awkward_values);
}

std::vector<test_util::Bytes> inputs(const std::vector<ir::NodeRef>& params) {
  std::vector<test_util::Bytes> out;
  for (const auto& n : params) out.push_back(test_util::bytes_of(awkward_values(n)));
  return out;
}

// The backend's target with `blocking` for its tiles and no work threshold (tiny tiles block too).
ir::Target tile_target(const backends::Backend& gpu, ir::TileBlocking blocking) {
  ir::Target t = gpu.target();
  t.gpu_tile = blocking;
  t.min_tile_work = 1;
  return t;
}

// `blocking` pipelined by asynchronous copies: on OpenCL the emulation, which a backend's own
// target never asks for.
ir::Target pipelined_target(const backends::Backend& gpu, ir::TileBlocking blocking) {
  ir::Target t = tile_target(gpu, blocking);
  t.gpu_async_copy = true;
  return t;
}

int blocked_tiles(const ir::LoweredRoutine& r) {
  int n = 0;
  ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
    const auto* t = std::get_if<ir::TileMma>(&s.node);
    n += t != nullptr && t->blocking.blocked() ? 1 : 0;
  });
  return n;
}

int pipelined_tiles(const ir::LoweredRoutine& r) {
  int n = 0;
  ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
    const auto* t = std::get_if<ir::TileMma>(&s.node);
    n += t != nullptr && t->blocking.async_copy ? 1 : 0;
  });
  return n;
}

// Runs `scheduled` (tiles expected: `tiles`) on the GPU for `target` and compares every param
// bitwise with `expected`, by default the interpreter's run of `reference`.
void expect_bitwise(const ir::LoweredRoutine& reference, const ir::LoweredRoutine& scheduled, const ir::Target& target,
                    std::vector<test_util::Bytes> expected = {}) {
  auto gpu = gpu_test::backend();
  const auto params = ir::nodes_of(reference.body);
  ASSERT_EQ(blocked_tiles(schedule::lower_for_target(scheduled, target)), 1) << ir::print_loop_ir(scheduled);
  if (expected.empty()) expected = interpreted(reference, params);
  const auto got = test_util::run_on(*gpu, {scheduled, params, target}, inputs(params));
  for (std::size_t k = 0; k < params.size(); ++k)
    EXPECT_EQ(got[k], expected[k]) << params[k]->debug_name() << "\n" << ir::print_loop_ir(scheduled);
}

// d[i, j] = fma(a[i, k], b[k, j], d[i, j]) (or d + a * b unfused), a and b stored transposed
// when asked ([k, i] and [j, k]); optionally zeroed first.
struct Case {
  std::int64_t m, n, k;
  bool a_t = false, b_t = false, fused = true, zero_first = false;
};

ir::LoweredRoutine matmul(const Case& c) {
  const ir::NodeRef a = ir::make_node("a", DType::F32, c.a_t ? std::vector<std::int64_t>{c.k, c.m} : std::vector<std::int64_t>{c.m, c.k});
  const ir::NodeRef b = ir::make_node("b", DType::F32, c.b_t ? std::vector<std::int64_t>{c.n, c.k} : std::vector<std::int64_t>{c.k, c.n});
  const ir::NodeRef d = ir::make_node("d", DType::F32, {c.m, c.n});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto ga = ir::get(a, c.a_t ? std::vector{it(k), it(i)} : std::vector{it(i), it(k)});
  const auto gb = ir::get(b, c.b_t ? std::vector{it(j), it(k)} : std::vector{it(k), it(j)});
  const auto gd = ir::get(d, {it(i), it(j)});
  const auto value = c.fused ? ir::apply(ir::Op::Fma, DType::F32, {ga, gb, gd})
                             : ir::apply(ir::Op::Add, DType::F32, {gd, ir::apply(ir::Op::Mul, DType::F32, {ga, gb})});
  const auto nest = ir::for_loop(i, 0, c.m, ir::for_loop(j, 0, c.n, ir::for_loop(k, 0, c.k, ir::set(d, {it(i), it(j)}, value))));
  return {"tile_matmul", c.zero_first ? ir::seq({ir::zero_out(d), nest}) : nest, {}};
}

// The nest of `r` (its last statement) tensorized as it stands, i j k.
ir::LoweredRoutine tensorized(const ir::LoweredRoutine& r) {
  const auto& top = std::get<ir::For>(ir::flatten_seq(r.body).back()->node);
  const auto& j = std::get<ir::For>(top.body->node);
  const auto& k = std::get<ir::For>(j.body->node);
  return schedule::apply(r, schedule::Tensorize{top.index, j.index, k.index});
}

TEST(GpuTile, EdgeSizesTransposesAndAccumulationAreBitwiseTheNest) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const ir::Target small = tile_target(*gpu, {16, 16, 8, 2, 2});
  for (const Case& c : {Case{1, 1, 1}, Case{17, 33, 65, true, false}, Case{17, 33, 65, false, true},
                        Case{5, 40, 9, true, true, false}, Case{33, 7, 16, false, false, true, true}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + (c.a_t ? " a^T" : "") +
                 (c.b_t ? " b^T" : "") + (c.fused ? "" : " unfused") + (c.zero_first ? " zero start" : ""));
    const ir::LoweredRoutine r = matmul(c);
    expect_bitwise(r, tensorized(r), small);
  }
}

// The serial nest of matmul(c) (fused, untransposed) computed directly, from awkward_values:
// each cell's steps in increasing order, one fma each (what the interpreter computes, without
// its cost per access on 2.5 million steps).
std::vector<test_util::Bytes> serial_fused_matmul(const ir::LoweredRoutine& r, const Case& c) {
  const auto params = ir::nodes_of(r.body);  // d, a, b in first-read order
  std::map<std::string, std::vector<float>> v;
  for (const auto& n : params) v[n->debug_name()] = awkward_values(n);
  std::vector<float>& d = v.at("d");
  const std::vector<float>&a = v.at("a"), &b = v.at("b");
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j)
      for (std::int64_t k = 0; k < c.k; ++k)
        d[static_cast<std::size_t>(i * c.n + j)] =
            std::fma(a[static_cast<std::size_t>(i * c.k + k)], b[static_cast<std::size_t>(k * c.n + j)], d[static_cast<std::size_t>(i * c.n + j)]);
  std::vector<test_util::Bytes> out;
  for (const auto& n : params) out.push_back(test_util::bytes_of(v.at(n->debug_name())));
  return out;
}

TEST(GpuTile, TheDefaultBlockingOverSeveralBlocks) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  // 128 x 96 x 200 in 64 x 64 blocks of 16-step slices: 2 x 2 blocks, the columns' second
  // partial, the last slice 8 steps long; the default GPU schedule makes the tile.
  const ir::Target t = tile_target(*gpu, ir::default_gpu_blocking(gpu->target().gpu));
  const Case c{128, 96, 200};
  const ir::LoweredRoutine r = matmul(c);
  expect_bitwise(r, schedule::default_gpu_schedule(r, {.target = t}), t, serial_fused_matmul(r, c));
}

// d[b, i, j] += a[b, i, k] * w[k, j] (w shared by the batch).
ir::LoweredRoutine batched_matmul() {
  const std::int64_t batch = 3, m = 20, n = 36, kk = 24;
  const ir::NodeRef a = ir::make_node("a", DType::F32, {batch, m, kk});
  const ir::NodeRef w = ir::make_node("w", DType::F32, {kk, n});
  const ir::NodeRef d = ir::make_node("d", DType::F32, {batch, m, n});
  const ir::Symbol b = ir::fresh_symbol(), i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto value = ir::apply(ir::Op::Fma, DType::F32,
                               {ir::get(a, {it(b), it(i), it(k)}), ir::get(w, {it(k), it(j)}), ir::get(d, {it(b), it(i), it(j)})});
  return {"tile_batched",
          ir::for_loop(b, 0, batch, ir::for_loop(i, 0, m, ir::for_loop(j, 0, n, ir::for_loop(k, 0, kk, ir::set(d, {it(b), it(i), it(j)}, value))))),
          {}};
}

TEST(GpuTile, BatchedMatmulRunsItsBatchOnTheGrid) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  // The batch a Grid loop on slot 1.
  const ir::LoweredRoutine r = batched_matmul();
  const ir::Target t = tile_target(*gpu, {16, 16, 8, 2, 2});
  const ir::LoweredRoutine scheduled = schedule::default_gpu_schedule(r, {.target = t});
  const auto& top = std::get<ir::For>(scheduled.body->node);
  EXPECT_EQ(top.axis, ir::AxisType::Grid) << ir::print_loop_ir(scheduled);
  expect_bitwise(r, scheduled, t);
}

// y[n, oh, ow, f] = fma(x[n, oh + kh, ow + kw, c], w[kh, kw, c, f], y[..]): rows n, oh, ow,
// columns f, steps kh, kw, c (an implicit im2col through index arithmetic).
ir::LoweredRoutine convolution() {
  const std::int64_t batch = 2, h = 7, ww = 6, c = 3, f = 20, kh = 3, kw = 2;
  const ir::NodeRef x = ir::make_node("x", DType::F32, {batch, h + kh - 1, ww + kw - 1, c});
  const ir::NodeRef w = ir::make_node("w", DType::F32, {kh, kw, c, f});
  const ir::NodeRef y = ir::make_node("y", DType::F32, {batch, h, ww, f});
  ir::Symbol s[7];
  for (auto& v : s) v = ir::fresh_symbol();
  const auto [sn, soh, sow, sf, skh, skw, sc] = std::tuple{s[0], s[1], s[2], s[3], s[4], s[5], s[6]};
  const auto sum = [](ir::Symbol p, ir::Symbol q) { return ir::AxisIndex{{{1, p}, {1, q}}, 0}; };
  const auto yi = std::vector{it(sn), it(soh), it(sow), it(sf)};
  const auto value = ir::apply(ir::Op::Fma, DType::F32,
                               {ir::get(x, {it(sn), sum(soh, skh), sum(sow, skw), it(sc)}),
                                ir::get(w, {it(skh), it(skw), it(sc), it(sf)}), ir::get(y, yi)});
  ir::StmtRef nest = ir::set(y, yi, value);
  const std::int64_t extents[7] = {batch, h, ww, f, kh, kw, c};
  for (int q = 6; q >= 0; --q) nest = ir::for_loop(s[q], 0, extents[q], nest);
  return {"tile_conv", nest, {}};
}

TEST(GpuTile, AConvolutionFoldsIntoOneTile) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const ir::LoweredRoutine r = convolution();
  const ir::Target t = tile_target(*gpu, {16, 16, 8, 2, 2});
  const ir::LoweredRoutine scheduled = schedule::default_gpu_schedule(r, {.target = t});
  bool folded = false;
  ir::for_each_stmt(scheduled.body, [&](const ir::Stmt& x) {
    if (const auto* tile = std::get_if<ir::TileMma>(&x.node)) folded = tile->folded();
  });
  EXPECT_TRUE(folded) << ir::print_loop_ir(scheduled);
  expect_bitwise(r, scheduled, t);
}

// The cases above with the staging pipelined: two stages per operand, copies one slice ahead.
// 16-byte copies where the layout is proven aligned (b of 36 and a^T of 20 columns: partial
// blocks, whole groups of four; w of the batch and the convolution), 4-byte copies elsewhere
// (a along its steps, 17 and 33 columns), partial last slices, a single slice.
TEST(GpuTile, PipelinedStagingIsBitwiseTheNest) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const ir::Target small = pipelined_target(*gpu, {16, 16, 8, 2, 2});
  const auto run = [&](const ir::LoweredRoutine& r, const ir::LoweredRoutine& scheduled, int wide_copies) {
    const ir::LoweredRoutine lowered = schedule::lower_for_target(scheduled, small);
    ASSERT_EQ(pipelined_tiles(lowered), 1) << ir::print_loop_ir(lowered);
    EXPECT_NE(ir::print_loop_ir(lowered).find("2 stages by async copies"), std::string::npos);
    std::vector<codegen::KernelBody> kernels;
    for (const auto& segment : schedule::fission(lowered, small, true))
      if (segment.kind == schedule::Segment::Kind::Kernel) kernels.push_back({segment.body, segment.geometry});
    const std::string source = codegen::emit_gpu(codegen::GpuLanguage::OpenCL, lowered, kernels, {.target = small}).text;
    std::size_t found = 0;
    for (std::size_t at = source.find("cannl_cp_async16(cannl_t"); at != std::string::npos;
         at = source.find("cannl_cp_async16(cannl_t", at + 1))
      ++found;
    EXPECT_EQ(found, static_cast<std::size_t>(2 * wide_copies)) << source;  // the first slice's and the next's
    expect_bitwise(r, scheduled, small);
  };
  for (const auto& [c, wide] : {std::pair{Case{1, 1, 1}, 0}, {Case{20, 36, 44}, 1}, {Case{20, 36, 44, true}, 2},
                                {Case{17, 33, 65, true, true}, 0}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + (c.a_t ? " a^T" : "") +
                 (c.b_t ? " b^T" : "") + (c.fused ? "" : " unfused") + (c.zero_first ? " zero start" : ""));
    const ir::LoweredRoutine r = matmul(c);
    run(r, tensorized(r), wide);
  }
  for (const ir::LoweredRoutine& r : {batched_matmul(), convolution()}) {
    SCOPED_TRACE(r.name);
    run(r, schedule::default_gpu_schedule(r, {.target = small}), 1);
  }
}

// Split-K over 257 steps (a prime: no chunk count divides it) on 32 x 32 cells, one block at any
// blocking: the default schedule (licensed) runs 2 chunks of 128 steps as a batched tile, then
// adds them and the peeled last step into each cell. Bitwise the interpreter's run of the same
// schedule (the tile keeps each chunk's order; the adds are in chunk order), and within the
// re-association's rounding of the serial nest.
TEST(GpuTile, SplitKWithAPeeledStepIsBitwiseItsSchedule) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  test_util::ConfigGuard guard;
  config::set_override("gpu_schedule_reassociate", "true");
  const ir::LoweredRoutine r = matmul({32, 32, 257, /*a_t=*/true, /*b_t=*/false, /*fused=*/false, /*zero_first=*/true});
  const ir::LoweredRoutine s = gpu->default_schedule(r);
  const std::string text = ir::print_loop_ir(s);
  ASSERT_NE(text.find("d_partials"), std::string::npos) << text;
  ASSERT_NE(text.find("in [256, 257)"), std::string::npos) << text;
  const auto params = ir::nodes_of(s.body);  // a, b, d and the partials
  const auto got = test_util::run_on(*gpu, {s, params}, inputs(params));
  EXPECT_EQ(got, interpreted(s, params)) << text;
  const auto d_of = [](const std::vector<ir::NodeRef>& nodes, const std::vector<test_util::Bytes>& bytes) {
    for (std::size_t k = 0; k < nodes.size(); ++k)
      if (nodes[k]->debug_name() == "d") return test_util::values_of<float>(bytes[k]);
    return std::vector<float>{};
  };
  const std::vector<float> serial = d_of(ir::nodes_of(r.body), interpreted(r, ir::nodes_of(r.body)));
  const std::vector<float> split = d_of(params, got);
  ASSERT_EQ(serial.size(), 32u * 32u);
  ASSERT_EQ(split.size(), serial.size());
  for (std::size_t k = 0; k < serial.size(); ++k) EXPECT_NEAR(split[k], serial[k], 1e-4f * 257) << k;
}

// The gpu_tile_* keys replace the device's blocking: one whose staged slices exceed the device's
// shared memory is a ScheduleError before the driver sees the kernel; one without whole register
// tiles per block is a ConfigError.
TEST(GpuTile, ConfiguredBlockingsAreCheckedBeforeTheDriver) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  test_util::ConfigGuard guard;
  const std::int64_t shared = gpu->target().gpu.max_shared_bytes;
  const std::int64_t bk = shared / ((65 + 65) * 4) + 1;
  if (bk > (1 << 16)) GTEST_SKIP() << "the device's shared memory holds any configurable slice";
  config::set_override("gpu_tile_bk", std::to_string(bk));
  ASSERT_EQ(gpu->target().gpu_tile.bk, bk);
  // Where the device's shared memory is large (PoCL sizes it from the CPU's caches) the slices are
  // long enough for the licensed partials or split-K to shorten the tile's reduction first.
  config::set_override("gpu_schedule_reassociate", "false");
  // A block per compute unit already: the blocking is not made smaller to fill the device.
  const ir::LoweredRoutine r = matmul({64 * std::max<std::int64_t>(1, gpu->target().gpu.compute_units), 64, 2 * bk});
  try {
    (void)gpu->compile({gpu->default_schedule(r), ir::nodes_of(r.body)});
    FAIL() << "compiled a tile staging " << bk << "-step slices:\n" << ir::print_loop_ir(gpu->default_schedule(r));
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("max_shared_bytes of " + std::to_string(shared)), std::string::npos) << e.what();
  }
  config::set_override("gpu_tile_tm", "5");
  EXPECT_THROW((void)gpu->target(), ConfigError);
  config::set_override("gpu_tile_tm", "4");
  config::set_override("gpu_async_copy", "sometimes");
  EXPECT_THROW((void)gpu->target(), ConfigError);
  config::set_override("gpu_async_copy", "off");
  EXPECT_FALSE(gpu->target().gpu_async_copy);
}

}  // namespace
}  // namespace cannl
