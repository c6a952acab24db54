// The CUDA form of generated modules (backends/gpu/cuda_compile_check.h) as NVRTC assembles it
// without a GPU: pipelined tiles (cp.async) are what a device of sm_80 or later runs, they
// assemble (ptxas checks the inline PTX, operands and all) for sm_80 and sm_90 and are rejected
// for sm_75, where the CUDA form keeps its tiles unpipelined. Skips where libnvrtc cannot be
// loaded.
#include <gtest/gtest.h>

#include "backends/gpu/cuda_compile_check.h"
#include "backends/gpu/device.h"
#include "backends/gpu/nvrtc_api.h"
#include "backends/run_util.h"
#include "cannl/codegen/gpu_codegen.h"
#include "cannl/ir/target.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/fission.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "schedule/schedule_test_util.h"

namespace cannl::test_gpu {
namespace {

using ir::DType;
using schedule::testing::it;

bool nvrtc_missing(std::string& why) {
  try {
    (void)backends::gpu::nvrtc_version();
    return false;
  } catch (const BackendUnavailable& e) {
    why = e.what();
    return true;
  }
}

// d[i, j] += a[k, i] * b[k, j] (a stored transposed) over 20 x 36 x 44, tensorized: 16-byte
// copies of both operands; with b's rows of 38 cells (`b_cols`), 4-byte copies of b. Operands
// promised exact in `rounded` (a tf32 tile where the target multiplies it).
ir::LoweredRoutine matmul(std::int64_t b_cols, ir::NarrowFormat rounded = ir::NarrowFormat::None) {
  const ir::NodeRef a = ir::make_node("a", DType::F32, {44, 20}), b = ir::make_node("b", DType::F32, {44, b_cols});
  const ir::NodeRef d = ir::make_node("d", DType::F32, {20, 36});
  a->rounded_to = b->rounded_to = rounded;
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto value = ir::apply(ir::Op::Add, DType::F32,
                               {ir::get(d, {it(i), it(j)}), ir::apply(ir::Op::Mul, DType::F32, {ir::get(a, {it(k), it(i)}),
                                                                                              ir::get(b, {it(k), it(j)})})});
  const auto nest = ir::for_loop(i, 0, 20, ir::for_loop(j, 0, 36, ir::for_loop(k, 0, 44, ir::set(d, {it(i), it(j)}, value))));
  return schedule::apply({"async_matmul", nest, {}}, schedule::Tensorize{i, j, k});
}

// An sm_90-like target (the OpenCL backend's in CI has no asynchronous copies either) that
// blocks tiny tiles; tf32 tensor cores when asked.
ir::Target target(bool tensor_cores) {
  ir::Target t = ir::generic_gpu_target({1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32, 132});
  t.gpu_tile = {16, 16, 8, 2, 2};
  t.min_tile_work = 1;
  if (tensor_cores) {
    t.gpu_mma_formats = {ir::NarrowFormat::TF32};
    t.gpu_mma_tile = {32, 32, 16, 16, 16};
  }
  return t;
}

struct Module {
  ir::LoweredRoutine routine;
  std::vector<codegen::KernelBody> kernels;
};

Module lowered(const ir::LoweredRoutine& r, const ir::Target& t) {
  Module m{schedule::lower_for_target(r, t), {}};
  for (const auto& s : schedule::fission(m.routine, t, true))
    if (s.kind == schedule::Segment::Kind::Kernel) m.kernels.push_back({s.body, s.geometry});
  return m;
}

int pipelined_tiles(const ir::StmtRef& body) {
  int n = 0;
  ir::for_each_stmt(body, [&](const ir::Stmt& s) {
    const auto* t = std::get_if<ir::TileMma>(&s.node);
    n += t != nullptr && t->blocking.async_copy ? 1 : 0;
  });
  return n;
}

TEST(CudaCompileCheck, PipelinedTilesAssembleForSm80AndSm90AndNotBefore) {
  std::string why;
  if (nvrtc_missing(why)) GTEST_SKIP() << why;
  struct Case {
    const char* what;
    ir::LoweredRoutine routine;
    bool tensor_cores;
    std::vector<std::string> instructions;
  };
  const Case cases[] = {
      {"scalar tile, 16-byte copies", matmul(36), false, {"cp.async.cg.shared.global [%0], [%1], 16, %2;"}},
      {"scalar tile, 4-byte copies of b", matmul(38), false, {"cp.async.ca.shared.global [%0], [%1], 4, %2;"}},
      {"tf32 tensor-core tile", matmul(36, ir::NarrowFormat::TF32), true, {"mma.sync.aligned.m16n8k8", "cp.async.cg"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ir::Target t = target(c.tensor_cores);
    t.gpu_async_copy = true;
    const Module m = lowered(c.routine, t);
    ASSERT_EQ(pipelined_tiles(m.routine.body), 1) << ir::print_loop_ir(m.routine);
    const std::string text = codegen::emit_gpu(codegen::GpuLanguage::Cuda, m.routine, m.kernels, {.target = t}).text;
    for (const std::string& instruction : c.instructions) EXPECT_NE(text.find(instruction), std::string::npos) << text;
    EXPECT_NE(text.find("cp.async.wait_all;"), std::string::npos);
    for (const char* arch : {"sm_80", "sm_90"}) {
      const auto out = backends::gpu::nvrtc_compile_program(text, backends::gpu::nvrtc_options(arch));
      EXPECT_FALSE(out.cubin.empty()) << arch;
    }
    try {
      (void)backends::gpu::nvrtc_compile(text, "sm_75");
      ADD_FAILURE() << "sm_75 assembled cp.async";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("cp.async"), std::string::npos) << e.what();
    }
  }
}

TEST(CudaCompileCheck, TheCudaFormPipelinesFromSm80OnUnlessTurnedOff) {
  test_util::ConfigGuard guard;
  const ir::Target opencl = target(false);  // copies synchronously, as the OpenCL backend's
  const Module m = lowered(matmul(36), opencl);
  ASSERT_EQ(pipelined_tiles(m.routine.body), 0);
  const auto form = [&](const std::string& arch) { return backends::gpu::cuda_form(m.routine, m.kernels, opencl, arch); };
  EXPECT_TRUE(form("sm_90").target.gpu_async_copy);
  EXPECT_EQ(pipelined_tiles(form("sm_90").routine.body), 1);
  EXPECT_EQ(pipelined_tiles(form("sm_80").kernels.at(0).body), 1);
  EXPECT_EQ(pipelined_tiles(form("sm_75").routine.body), 0);
  EXPECT_EQ(pipelined_tiles(form("sm_75").kernels.at(0).body), 0);
  config::set_override("gpu_async_copy", "off");
  EXPECT_EQ(pipelined_tiles(form("sm_90").routine.body), 0);
  EXPECT_FALSE(form("sm_90").target.gpu_async_copy);
}

// d[c] += x[c, r] over rows of `row` steps, one block a row (c on the Grid, r a WorkgroupReduce
// loop of `row` threads): a block reduction.
ir::LoweredRoutine row_sums(std::int64_t rows, std::int64_t row) {
  const ir::NodeRef x = ir::make_node("x", DType::F32, {rows, row}), d = ir::make_node("d", DType::F32, {rows});
  const ir::Symbol c = ir::fresh_symbol(), r = ir::fresh_symbol();
  const auto value = ir::apply(ir::Op::Add, DType::F32, {ir::get(d, {it(c)}), ir::get(x, {it(c), it(r)})});
  const auto nest = ir::for_loop(c, 0, rows, ir::for_loop(r, 0, row, ir::set(d, {it(c)}, value)));
  return schedule::apply({"row_sums", nest, {}}, std::vector<schedule::Transform>{
                                                     schedule::Retype{c, ir::AxisType::Grid},
                                                     schedule::Retype{r, ir::AxisType::WorkgroupReduce}});
}

// The CUDA form runs warps of 32 lanes whatever the OpenCL device's (PoCL's are 1): a block
// reduction ends in __shfl_down_sync over the lanes that take part (the whole warp, or the 16
// threads of a narrower block), and the module assembles for sm_90.
TEST(CudaCompileCheck, BlockReductionsEndInWarpShufflesOverTheLanesThatTakePart) {
  ir::Target opencl = target(false);
  opencl.gpu.warp_size = 1;
  for (const auto& [row, mask] : {std::pair{256, "0xffffffffu"}, std::pair{16, "0x0000ffffu"}}) {
    SCOPED_TRACE(row);
    const Module m = lowered(row_sums(8, row), opencl);
    const auto form = backends::gpu::cuda_form(m.routine, m.kernels, opencl, "sm_90");
    EXPECT_EQ(form.target.gpu.warp_size, 32);
    const std::string text = codegen::emit_gpu(codegen::GpuLanguage::Cuda, form.routine, form.kernels, {.target = form.target}).text;
    EXPECT_NE(text.find(std::string("__shfl_down_sync(") + mask + ", "), std::string::npos) << text;
    const std::string plain = codegen::emit_gpu(codegen::GpuLanguage::Cuda, m.routine, m.kernels, {.target = opencl}).text;
    EXPECT_EQ(plain.find("__shfl"), std::string::npos) << plain;
    std::string why;
    if (nvrtc_missing(why)) continue;
    EXPECT_FALSE(backends::gpu::nvrtc_compile_program(text, backends::gpu::nvrtc_options("sm_90")).cubin.empty());
  }
}

// A thread's vector loop in CUDA (16-byte loads and stores of float4 and int4, make_float4 of
// the lanes) assembles for sm_90.
TEST(CudaCompileCheck, VectorLoopsAssembleForSm90) {
  const ir::NodeRef x = ir::make_node("x", DType::F32, {8, 64}), k = ir::make_node("k", DType::I32, {8, 64});
  const ir::NodeRef y = ir::make_node("y", DType::F32, {8, 64}), n = ir::make_node("n", DType::I32, {8, 64});
  const ir::Symbol i = ir::fresh_symbol(), q = ir::fresh_symbol(), l = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> at{it(i), ir::AxisIndex{{{4, q}, {1, l}}, 0}};
  const auto body = ir::seq({ir::set(y, at, ir::apply(ir::Op::Max, DType::F32, {ir::get(x, at), ir::constant(0, DType::F32)})),
                             ir::set(n, at, ir::apply(ir::Op::Add, DType::I32, {ir::get(k, at), ir::get(k, at)}))});
  const auto nest = ir::for_loop(
      i, 0, 8, ir::for_loop(q, 0, 16, ir::for_loop(l, 0, 4, body, ir::AxisType::Vectorized), ir::AxisType::Workgroup), ir::AxisType::Grid);
  const ir::Target t = target(false);
  const Module m = lowered({"vector_lanes", nest, {}}, t);
  const std::string text = codegen::emit_gpu(codegen::GpuLanguage::Cuda, m.routine, m.kernels, {.target = t}).text;
  EXPECT_NE(text.find("*(const int4 *)&k["), std::string::npos) << text;
  EXPECT_NE(text.find("make_float4("), std::string::npos) << text;
  std::string why;
  if (nvrtc_missing(why)) GTEST_SKIP() << why;
  EXPECT_FALSE(backends::gpu::nvrtc_compile_program(text, backends::gpu::nvrtc_options("sm_90")).cubin.empty());
}

TEST(CudaCompileCheck, AsyncCopiesFromSm80On) {
  using backends::gpu::cuda_async_copy;
  EXPECT_FALSE(cuda_async_copy("sm_75"));
  EXPECT_TRUE(cuda_async_copy("sm_80"));
  EXPECT_TRUE(cuda_async_copy("sm_90a"));
  EXPECT_FALSE(cuda_async_copy("gfx90a"));
}

}  // namespace
}  // namespace cannl::test_gpu
