// The HIP dialect: one source for hiprtc and hipcc (its own integer typedefs only under hiprtc),
// the CUDA-style kernel spellings, and block reductions whose in-wave steps are shuffles sized by
// the target's wave (64 lanes on CDNA, 32 on RDNA), falling back to shared memory where the
// reduction's threads do not start at a wave's first lane or its value is no 32/64-bit word.
#include <gtest/gtest.h>

#include "cannl/codegen/gpu_codegen.h"
#include "cannl/ir/kernel_geometry.h"

namespace cannl::codegen {
namespace {

using ir::AxisIndex;
using ir::AxisType;
using ir::DType;

AxisIndex it(ir::Symbol s) { return AxisIndex::iterator(s); }

// An AMD GPU's launch limits with a wave of `wave` lanes.
CodegenOptions amd(int wave) {
  return {.target = ir::generic_gpu_target({1024, {1024, 1024, 1024}, {2147483647, 65535, 65535}, 65536, wave})};
}

// s[i] = s[i] + x[i, r]: i over `rows` (threads of slot 1 when `rows_as_threads`, else blocks),
// r over `cols` threads of slot 0 reduced as a WorkgroupReduce loop.
GeneratedModule row_sums(DType dtype, std::int64_t rows, std::int64_t cols, bool rows_as_threads, int wave) {
  const ir::NodeRef x = ir::make_node("x", dtype, {rows, cols});
  const ir::NodeRef s = ir::make_node("s", dtype, {rows});
  const ir::Symbol i = ir::fresh_symbol(), r = ir::fresh_symbol();
  const auto sum = ir::apply(ir::Op::Add, dtype, {ir::get(s, {it(i)}), ir::get(x, {it(i), it(r)})});
  const auto body = ir::for_loop(i, 0, rows, ir::for_loop(r, 0, cols, ir::set(s, {it(i)}, sum), AxisType::WorkgroupReduce),
                                 rows_as_threads ? AxisType::Workgroup : AxisType::Grid);
  return emit_gpu(GpuLanguage::Hip, {"row_sums", body, {}}, {{body, ir::kernel_geometry(body)}}, amd(wave));
}

TEST(HipCodegen, OneSourceServesHiprtcAndHipcc) {
  const ir::NodeRef a = ir::make_node("a", DType::I64, {64});
  const ir::Symbol i = ir::fresh_symbol();
  const auto body = ir::for_loop(i, 0, 64, ir::set(a, {it(i)}, ir::constant(1, DType::I64)), AxisType::Workgroup);
  const GeneratedModule m = emit_gpu(GpuLanguage::Hip, {"ones", body, {}}, {{body, ir::kernel_geometry(body)}}, amd(64));
  // hiprtc has no <stdint.h>; hipcc's runtime header brings glibc's, whose int64_t is `long`.
  const auto rtc = m.text.find("#ifdef __HIPCC_RTC__\ntypedef signed char int8_t;");
  const auto offline = m.text.find("#else\n#include <hip/hip_runtime.h>\n#include <stdint.h>\n#endif\n");
  ASSERT_NE(rtc, std::string::npos) << m.text;
  ASSERT_NE(offline, std::string::npos) << m.text;
  EXPECT_LT(m.text.find("typedef long long int64_t;"), offline);
  EXPECT_NE(m.text.find("extern \"C\" __global__ void __launch_bounds__(64) ones_k0(int64_t *__restrict__ a"),
            std::string::npos)
      << m.text;
  EXPECT_NE(m.text.find("= (int32_t)threadIdx.x;"), std::string::npos) << m.text;
}

TEST(HipCodegen, NarrowFloatsAreStoredAsBitsAndConvertedByThePrelude) {
  const ir::NodeRef a = ir::make_node("a", DType::BF16, {64});
  const ir::NodeRef b = ir::make_node("b", DType::FP8, {64});
  const ir::Symbol i = ir::fresh_symbol();
  const auto body = ir::for_loop(i, 0, 64, ir::set(b, {it(i)}, ir::get(a, {it(i)})), AxisType::Workgroup);
  const GeneratedModule m = emit_gpu(GpuLanguage::Hip, {"narrow", body, {}}, {{body, ir::kernel_geometry(body)}}, amd(64));
  EXPECT_NE(m.text.find("uint16_t *__restrict__ a"), std::string::npos) << m.text;
  EXPECT_NE(m.text.find("uint8_t *__restrict__ b"), std::string::npos) << m.text;
  EXPECT_NE(m.text.find("cannl_bf16_to_f32"), std::string::npos) << m.text;
  EXPECT_EQ(m.text.find("__hip_bfloat16"), std::string::npos) << "HIP's own conversions round differently";
}

TEST(HipCodegen, BlockReductionShufflesWithinTheTargetsWave) {
  const GeneratedModule w64 = row_sums(DType::F32, 8, 300, false, 64);
  const GeneratedModule w32 = row_sums(DType::F32, 8, 300, false, 32);
  // 300 values: shared-memory steps of 256, 128 (and 64, 32 on wave32), then shuffles.
  EXPECT_NE(w64.text.find(" = 256; i"), std::string::npos) << w64.text;
  EXPECT_NE(w64.text.find(" >= 64; "), std::string::npos) << w64.text;
  EXPECT_NE(w64.text.find(" < 64) {"), std::string::npos) << w64.text;
  EXPECT_NE(w64.text.find(" = 32; i"), std::string::npos) << w64.text;
  EXPECT_NE(w32.text.find(" >= 32; "), std::string::npos) << w32.text;
  EXPECT_NE(w32.text.find(" = 16; i"), std::string::npos) << w32.text;
  for (const auto* m : {&w64, &w32}) {
    EXPECT_NE(m->text.find("__shfl_down("), std::string::npos) << m->text;
    EXPECT_NE(m->text.find("__shared__ float cannl_red_"), std::string::npos) << m->text;
  }
  EXPECT_NE(w64.text, w32.text);
}

TEST(HipCodegen, ShortReductionsAreAllShuffles) {
  // 40 values: the first step (32) already lies within a wave of 64; on wave32 it does not.
  const GeneratedModule w64 = row_sums(DType::F32, 8, 40, false, 64);
  EXPECT_EQ(w64.text.find(" >= 64; "), std::string::npos) << w64.text;
  EXPECT_NE(w64.text.find(" = 32; i"), std::string::npos) << w64.text;
  const GeneratedModule w32 = row_sums(DType::F32, 8, 40, false, 32);
  EXPECT_NE(w32.text.find(" = 32; i"), std::string::npos) << w32.text;
  EXPECT_NE(w32.text.find(" >= 32; "), std::string::npos) << w32.text;
}

TEST(HipCodegen, ReductionsOffAWavesFirstLaneStayInSharedMemory) {
  // Rows as a second thread dimension over 100-thread rows: the second row starts mid-wave.
  EXPECT_EQ(row_sums(DType::F32, 2, 100, true, 64).text.find("__shfl_down("), std::string::npos);
  // 128-thread rows are two whole waves each: shuffles again.
  EXPECT_NE(row_sums(DType::F32, 2, 128, true, 64).text.find("__shfl_down("), std::string::npos);
  // 8-bit values are no shuffle word; 64-bit ones are.
  EXPECT_EQ(row_sums(DType::U8, 4, 100, false, 64).text.find("__shfl_down("), std::string::npos);
  EXPECT_NE(row_sums(DType::I64, 4, 100, false, 64).text.find("__shfl_down("), std::string::npos);
}

// OpenCL has no shuffles (the tree stays in local memory to its last step); CUDA's mask the
// lanes that take part, and never take HIP's unmasked spelling.
TEST(HipCodegen, OpenClKeepsItsSharedMemoryTreeAndCudaNamesItsShuffledLanes) {
  const ir::NodeRef x = ir::make_node("x", DType::F32, {8, 300});
  const ir::NodeRef s = ir::make_node("s", DType::F32, {8});
  const ir::Symbol i = ir::fresh_symbol(), r = ir::fresh_symbol();
  const auto sum = ir::apply(ir::Op::Add, DType::F32, {ir::get(s, {it(i)}), ir::get(x, {it(i), it(r)})});
  const auto body = ir::for_loop(i, 0, 8, ir::for_loop(r, 0, 300, ir::set(s, {it(i)}, sum), AxisType::WorkgroupReduce),
                                 AxisType::Grid);
  const auto emitted = [&](GpuLanguage language) {
    return emit_gpu(language, {"row_sums", body, {}}, {{body, ir::kernel_geometry(body)}}, amd(32)).text;
  };
  const std::string opencl = emitted(GpuLanguage::OpenCL);
  EXPECT_EQ(opencl.find("shfl"), std::string::npos) << opencl;
  EXPECT_NE(opencl.find(" > 0; "), std::string::npos) << opencl;
  // CUDA's warp shuffles name their lanes: the whole warp of a block wider than one.
  const std::string cuda = emitted(GpuLanguage::Cuda);
  EXPECT_NE(cuda.find("__shfl_down_sync(0xffffffffu, "), std::string::npos) << cuda;
  EXPECT_EQ(cuda.find("__shfl_down("), std::string::npos) << cuda;
}

}  // namespace
}  // namespace cannl::codegen
