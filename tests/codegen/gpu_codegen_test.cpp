// The GPU dialects over the C-family printer: kernel heads and launch attributes, hardware index
// bindings by slot with guards for loops shorter than their slot, per-kernel parameter lists, and
// the dialects' prelude spellings (typedefs, bit casts, OpenCL's math names, no contraction).
#include "cannl/codegen/gpu_codegen.h"

#include <gtest/gtest.h>

#include "cannl/ir/kernel_geometry.h"

namespace cannl::codegen {
namespace {

using ir::AxisIndex;
using ir::AxisType;
using ir::DType;

AxisIndex it(ir::Symbol s) { return AxisIndex::iterator(s); }

struct TwoKernels {
  ir::LoweredRoutine routine;
  std::vector<KernelBody> kernels;
  ir::NodeRef a, b, c;
};

// Kernel 0: c[i, j] = max(a[i, j], b[j]) with i over 8 blocks and j over 100 threads; kernel 1:
// b[j] = b[j] * 2 over 64 threads of a block of 100 (guarded), then a serial loop.
TwoKernels two_kernels() {
  TwoKernels t;
  t.a = ir::make_node("a", DType::F32, {8, 100});
  t.b = ir::make_node("b", DType::F32, {100});
  t.c = ir::make_node("c", DType::F32, {8, 100});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol(), m = ir::fresh_symbol();
  const auto max = ir::apply(ir::Op::Max, DType::F32, {ir::get(t.a, {it(i), it(j)}), ir::get(t.b, {it(j)})});
  const auto k0 = ir::for_loop(i, 0, 8, ir::for_loop(j, 0, 100, ir::set(t.c, {it(i), it(j)}, max), AxisType::Workgroup),
                               AxisType::Grid);
  const auto twice = ir::apply(ir::Op::Mul, DType::F32, {ir::get(t.b, {it(k)}), ir::constant(2, DType::F32)});
  const auto k1 = ir::seq({ir::for_loop(k, 0, 64, ir::set(t.b, {it(k)}, twice), AxisType::Workgroup),
                           ir::for_loop(m, 0, 100, ir::set(t.b, {it(m)}, ir::get(t.b, {it(m)})), AxisType::Workgroup)});
  t.routine = {"step", ir::seq({k0, k1}), {}};
  t.kernels = {{k0, ir::kernel_geometry(k0)}, {k1, ir::kernel_geometry(k1)}};
  return t;
}

TEST(GpuCodegen, CudaKernelsBindBlockAndThreadIndices) {
  const TwoKernels t = two_kernels();
  const GeneratedModule m = emit_gpu(GpuLanguage::Cuda, t.routine, t.kernels);
  ASSERT_EQ(m.kernels.size(), 2u);
  EXPECT_EQ(m.kernels[0].name, "step_k0");
  EXPECT_EQ(m.kernels[0].params.size(), 3u);  // c, a, b in first-use order
  EXPECT_EQ(m.kernels[1].params.size(), 1u);  // b
  EXPECT_NE(m.text.find("extern \"C\" __global__ void __launch_bounds__(100) step_k0("), std::string::npos) << m.text;
  EXPECT_NE(m.text.find("float *__restrict__ a"), std::string::npos);
  EXPECT_NE(m.text.find("= (int64_t)blockIdx.x;"), std::string::npos);
  EXPECT_NE(m.text.find("= (int64_t)threadIdx.x;"), std::string::npos);
  // The 64-thread loop runs in a block of 100: guarded; the 100-thread loops are not.
  EXPECT_NE(m.text.find(" < 64) {"), std::string::npos);
  EXPECT_EQ(m.text.find(" < 100) {"), std::string::npos);
  // Max uses the prelude's maximumNumber, whose bit casts are CUDA intrinsics.
  EXPECT_NE(m.text.find("__float_as_int(x)"), std::string::npos);
  EXPECT_EQ(m.text.find("memcpy"), std::string::npos);
  EXPECT_NE(m.text.find("typedef long long int64_t;"), std::string::npos);
  EXPECT_NE(m.text.find("step_k1: grid [1, 1, 1] x block [100, 1, 1]"), std::string::npos);
}

TEST(GpuCodegen, OpenClKernelsRequireTheirWorkGroupSizeAndDoNotContract) {
  const TwoKernels t = two_kernels();
  const GeneratedModule m = emit_gpu(GpuLanguage::OpenCL, t.routine, t.kernels);
  EXPECT_NE(m.text.find("__kernel __attribute__((reqd_work_group_size(100, 1, 1))) void step_k0("), std::string::npos)
      << m.text;
  EXPECT_NE(m.text.find("__global float *restrict a"), std::string::npos);
  EXPECT_NE(m.text.find("get_group_id(0)"), std::string::npos);
  EXPECT_NE(m.text.find("get_local_id(0)"), std::string::npos);
  EXPECT_NE(m.text.find("#pragma OPENCL FP_CONTRACT OFF"), std::string::npos);
  EXPECT_NE(m.text.find("as_int(x)"), std::string::npos);
  EXPECT_NE(m.text.find("#define expf exp"), std::string::npos);
}

TEST(GpuCodegen, ZeroingInsideAKernelIsALoop) {
  const ir::NodeRef a = ir::make_node("acc", DType::F32, {16});
  const ir::Symbol i = ir::fresh_symbol();
  const auto body = ir::seq({ir::zero_out(a), ir::for_loop(i, 0, 16, ir::set(a, {it(i)}, ir::constant(1, DType::F32)))});
  const GeneratedModule m = emit_gpu(GpuLanguage::Cuda, {"z", body, {}}, {{body, ir::kernel_geometry(body)}});
  EXPECT_NE(m.text.find("for (int64_t cannl_z = 0; cannl_z < 16; ++cannl_z) acc[cannl_z] = 0;"), std::string::npos)
      << m.text;
}

TEST(GpuCodegen, BuffersWrittenAcrossABarrierAreNotRestrict) {
  // t[i] = i by thread i, barrier, out[i] = t[3 - i]: the compiler may not keep a thread's own
  // t[i] across the barrier, so t is no restrict pointer; out and the read-only input stay one.
  const ir::NodeRef t = ir::make_node("t", DType::F32, {4});
  const ir::NodeRef out = ir::make_node("out", DType::F32, {4});
  const ir::NodeRef in = ir::make_node("in", DType::F32, {4});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  AxisIndex mirrored = AxisIndex::fixed(3);
  mirrored.terms.push_back({-1, j});
  const auto body = ir::seq({ir::for_loop(i, 0, 4, ir::set(t, {it(i)}, ir::get(in, {it(i)})), AxisType::Workgroup),
                             ir::barrier(),
                             ir::for_loop(j, 0, 4, ir::set(out, {it(j)}, ir::get(t, {mirrored})), AxisType::Workgroup)});
  const GeneratedModule cuda = emit_gpu(GpuLanguage::Cuda, {"mirror", body, {}}, {{body, ir::kernel_geometry(body)}});
  EXPECT_NE(cuda.text.find("    float *t,"), std::string::npos) << cuda.text;
  EXPECT_NE(cuda.text.find("float *__restrict__ in"), std::string::npos);
  EXPECT_NE(cuda.text.find("__syncthreads();"), std::string::npos);
  const GeneratedModule cl = emit_gpu(GpuLanguage::OpenCL, {"mirror", body, {}}, {{body, ir::kernel_geometry(body)}});
  EXPECT_NE(cl.text.find("__global float *t"), std::string::npos) << cl.text;
  EXPECT_NE(cl.text.find("__global float *restrict in"), std::string::npos);
}

// y[i, 4q + l] = x[i, 4q + l] * 2 over 4 lanes l (Vectorized) of threads q: rows of 64 cells move
// as 16-byte vectors in every dialect; rows of 66 leave odd rows misaligned, so those accesses go
// lane by lane.
std::string doubled_lanes(GpuLanguage language, std::int64_t cols) {
  const ir::NodeRef x = ir::make_node("x", DType::F32, {8, cols}), y = ir::make_node("y", DType::F32, {8, cols});
  const ir::Symbol i = ir::fresh_symbol(), q = ir::fresh_symbol(), l = ir::fresh_symbol();
  const std::vector<AxisIndex> at{it(i), AxisIndex{{{4, q}, {1, l}}, 0}};
  const auto twice = ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, at), ir::constant(2, DType::F32)});
  const auto body = ir::for_loop(
      i, 0, 8, ir::for_loop(q, 0, 16, ir::for_loop(l, 0, 4, ir::set(y, at, twice), AxisType::Vectorized), AxisType::Workgroup),
      AxisType::Grid);
  const CodegenOptions options{.target = ir::generic_gpu_target({1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32})};
  return emit_gpu(language, {"lanes", body, {}}, {{body, ir::kernel_geometry(body)}}, options).text;
}

TEST(GpuCodegen, VectorLoopsMoveAlignedLanesAsSixteenByteVectors) {
  const std::string cuda = doubled_lanes(GpuLanguage::Cuda, 64);
  EXPECT_NE(cuda.find("= *(const float4 *)&x["), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("*(float4 *)&y["), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("= make_float4(("), std::string::npos) << cuda;
  const std::string opencl = doubled_lanes(GpuLanguage::OpenCL, 64);
  EXPECT_NE(opencl.find("vload4(0, &x["), std::string::npos) << opencl;
  EXPECT_NE(opencl.find("vstore4((float4)(("), std::string::npos) << opencl;
  EXPECT_NE(doubled_lanes(GpuLanguage::Hip, 64).find("make_float4("), std::string::npos);
  const std::string odd = doubled_lanes(GpuLanguage::Cuda, 66);
  EXPECT_EQ(odd.find("float4"), std::string::npos) << odd;
  EXPECT_NE(odd.find("16-byte loads and stores where aligned"), std::string::npos) << odd;
}

}  // namespace
}  // namespace cannl::codegen
