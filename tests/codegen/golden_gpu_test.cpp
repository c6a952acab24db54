// Golden GPU sources (tests/golden/codegen/<case>.cu, .hip and .cl) of a matmul and a softmax:
// the optimized routine under the default GPU schedule for a CUDA-like device (1024 threads per
// block, blocks of 256; for HIP an AMD one with waves of 64), the final lowering round and
// fission, printed by each GPU dialect; and of a block reduction in HIP for waves of 64 and of
// 32 lanes (gfx90a, gfx1030), whose in-wave steps are shuffles; and of a CUDA matmul tile
// pipelined by cp.async. Only the kernels are compared
// (from the first kernel on, assignment comments dropped), not the header or the prelude. A
// change of the schedule, fission or the dialects fails here; when intended, regenerate and
// review the diff:
//
//   CANNL_TEST_UPDATE_GOLDEN=1 ./test_codegen --gtest_filter='GoldenGpu.*'
//
// Where Debian's hipcc (ROCm 5.2) is installed, each golden HIP module is also compiled whole,
// offline, to a code object for the architectures it is for (gfx90a: wave64; gfx1030: wave32).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cannl/cannl.h"
#include "cannl/codegen/gpu_codegen.h"
#include "cannl/ir/kernel_geometry.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/fission.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/files.h"
#include "cannl/support/process.h"
#include "codegen/golden_util.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

using testing::ramp;

// The kernels of a module, without the assignment comments (they name process-global symbols).
std::string kernels_text(const std::string& source, const std::string& first_kernel) {
  const auto at = source.find(first_kernel);
  static const std::regex assignment_comment("\n *\\/\\*[^\n]*=:[^\n]*\\*\\/");
  return std::regex_replace(at == std::string::npos ? source : source.substr(at), assignment_comment, "");
}

const ir::Target kCudaLike = ir::generic_gpu_target({1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32});
// An AMD GPU of `wave` lanes per wave: 64 KiB of LDS, 1024 threads per block.
ir::Target amd_target(int wave) {
  return ir::generic_gpu_target({1024, {1024, 1024, 1024}, {2147483647, 65535, 65535}, 65536, wave});
}

// `optimized` under the default GPU schedule for `target`, lowered, fissioned and printed whole.
std::string scheduled_module(const ir::LoweredRoutine& optimized, const ir::Target& target,
                             codegen::GpuLanguage language) {
  const ir::LoweredRoutine scheduled =
      schedule::lower_for_target(schedule::default_gpu_schedule(optimized, {.target = target}), target);
  std::vector<codegen::KernelBody> kernels;
  for (const auto& s : schedule::fission(scheduled, target)) {
    if (s.kind == schedule::Segment::Kind::Kernel) kernels.push_back({s.body, s.geometry});
  }
  return codegen::emit_gpu(language, scheduled, kernels, {.target = target}).text;
}

// Compiles the HIP module `text` with hipcc to one code object for `archs`, with the options
// hiprtc gets at run time; skipped (with a note) where hipcc is not installed.
void expect_hipcc_compiles(const std::string& name, const std::string& text, const std::vector<std::string>& archs) {
  if (process::resolve_program("hipcc").empty()) {
    std::printf("[ note ] no hipcc here: %s.hip is checked as text only\n", name.c_str());
    return;
  }
  const std::filesystem::path dir = files::build_dir() / "hipcc";
  std::filesystem::create_directories(dir);
  const std::filesystem::path source = dir / (name + ".hip"), object = dir / (name + ".co"), log = dir / (name + ".log");
  files::write_atomically(source, text);
  std::vector<std::string> argv{"hipcc", "--genco", "-O3", "-std=c++17", "-ffp-contract=off"};
  for (const auto& arch : archs) argv.push_back("--offload-arch=" + arch);
  for (const std::string& path : {source.string(), std::string("-o"), object.string()}) argv.push_back(path);
  const process::Result r = process::run(argv, log);
  ASSERT_TRUE(r.started && r.exit_status == 0) << process::shell_quoted(argv) << " failed:\n" << files::read_file(log);
  const std::string code = files::read_file(object);
  for (const auto& arch : archs)
    EXPECT_NE(code.find("amdgcn-amd-amdhsa--" + arch), std::string::npos) << "no code object for " << arch;
}

void check_golden(const std::string& name, const Tensor& out) {
  runtime::Context ctx = runtime::Context::interpreter();
  train::upload_literals(ctx, {out});
  const ir::LoweredRoutine optimized = ctx.optimized_routine(forward_code({out}), name);
  for (const auto& [language, target, extension, head] :
       {std::tuple{codegen::GpuLanguage::Cuda, kCudaLike, ".cu", "extern \"C\" __global__"},
        std::tuple{codegen::GpuLanguage::Hip, amd_target(64), ".hip", "extern \"C\" __global__"},
        std::tuple{codegen::GpuLanguage::OpenCL, kCudaLike, ".cl", "__kernel __attribute__"}}) {
    const std::string module = scheduled_module(optimized, target, language);
    testing::expect_golden(name + extension, kernels_text(module, head));
    // Without block reductions the module is the same for either wave size.
    if (language == codegen::GpuLanguage::Hip) expect_hipcc_compiles(name, module, {"gfx90a", "gfx1030"});
  }
}

TEST(GoldenGpu, Matmul) {
  // y[b, o] = sum_i w[o, i] x[b, i]: 256 x 128 x 192.
  Tensor x = literal("x", ramp(256 * 192), {.batch = Dims{256}, .output = Dims{192}});
  Tensor w = literal("w", ramp(128 * 192), {.input = Dims{192}, .output = Dims{128}});
  check_golden("gpu_matmul", w * x);
}

TEST(GoldenGpu, Softmax) {
  Tensor x = literal("logits", ramp(512 * 1000), {.batch = Dims{512}, .output = Dims{1000}});
  check_golden("gpu_softmax", nn::softmax(x));
}

// A matmul tile with its staging pipelined by cp.async, as a CUDA device of sm_80 or later runs
// it: d[i, j] += a[k, i] * b[k, j] over 96 x 128 x 80 in the default 64 x 64 x 16 blocks, both
// operands copied 16 bytes at a time; the last blocks partial.
TEST(GoldenGpu, CudaMatmulTileWithAsyncCopies) {
  const ir::NodeRef a = ir::make_node("a", ir::DType::F32, {80, 96}), b = ir::make_node("b", ir::DType::F32, {80, 128});
  const ir::NodeRef d = ir::make_node("d", ir::DType::F32, {96, 128});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto at = [](ir::Symbol v) { return ir::AxisIndex::iterator(v); };
  const auto value = ir::apply(ir::Op::Fma, ir::DType::F32, {ir::get(a, {at(k), at(i)}), ir::get(b, {at(k), at(j)}), ir::get(d, {at(i), at(j)})});
  const auto nest = ir::for_loop(i, 0, 96, ir::for_loop(j, 0, 128, ir::for_loop(k, 0, 80, ir::set(d, {at(i), at(j)}, value))));
  const ir::LoweredRoutine tiled = schedule::apply({"async_matmul", nest, {}}, schedule::Tensorize{i, j, k});
  ir::Target target = kCudaLike;
  target.gpu_async_copy = true;
  const ir::LoweredRoutine lowered = schedule::lower_for_target(tiled, target);
  std::vector<codegen::KernelBody> kernels;
  for (const auto& s : schedule::fission(lowered, target))
    if (s.kind == schedule::Segment::Kind::Kernel) kernels.push_back({s.body, s.geometry});
  const std::string module = codegen::emit_gpu(codegen::GpuLanguage::Cuda, lowered, kernels, {.target = target}).text;
  EXPECT_NE(module.find("cp.async.cg.shared.global [%0], [%1], 16, %2;"), std::string::npos) << module;
  testing::expect_golden("gpu_matmul_async_copies.cu", kernels_text(module, "extern \"C\" __global__"));
}

TEST(GoldenGpu, HipBlockReductionForWavesOf64And32) {
  // s[i] = s[i] + x[i, r]: 24 rows as blocks, 300 columns summed by the threads of each.
  const ir::NodeRef x = ir::make_node("x", ir::DType::F32, {24, 300});
  const ir::NodeRef s = ir::make_node("s", ir::DType::F32, {24});
  const ir::Symbol i = ir::fresh_symbol(), r = ir::fresh_symbol();
  const auto at = [](ir::Symbol v) { return ir::AxisIndex::iterator(v); };
  const auto sum = ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(s, {at(i)}), ir::get(x, {at(i), at(r)})});
  const auto body = ir::for_loop(
      i, 0, 24, ir::for_loop(r, 0, 300, ir::set(s, {at(i)}, sum), ir::AxisType::WorkgroupReduce), ir::AxisType::Grid);
  const ir::LoweredRoutine routine{"row_sums", body, {}};
  std::string texts[2];
  for (const int wave : {64, 32}) {
    const auto module = codegen::emit_gpu(codegen::GpuLanguage::Hip, routine, {{body, ir::kernel_geometry(body)}},
                                          {.target = amd_target(wave)});
    texts[wave == 32] = kernels_text(module.text, "extern \"C\" __global__");
    const std::string name = "gpu_block_reduction_wave" + std::to_string(wave);
    testing::expect_golden(name + ".hip", texts[wave == 32]);
    expect_hipcc_compiles(name, module.text, {wave == 64 ? "gfx90a" : "gfx1030"});
  }
  EXPECT_NE(texts[0], texts[1]);
}

}  // namespace
}  // namespace cannl
