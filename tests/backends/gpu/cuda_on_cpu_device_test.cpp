// The cuda-cpu device (backends/gpu/cuda_on_cpu_device.cpp): hand-written CUDA kernels compiled
// for the host and run on fibers, against answers worked out here: the device checks every GPU
// device passes, barriers and their misuse, warp shuffles, the tensor-core fragments as
// ldmatrix and mma.sync deliver them, and cp.async.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/gpu/device_checks.h"
#include "backends/run_util.h"
#include "cannl/support/config.h"
#include "cannl/support/float_codecs.h"

namespace cannl::test_gpu {
namespace {

using backends::gpu::open_cuda_on_cpu;

std::shared_ptr<Device> device_or_skip(std::string& why) {
  try {
    return open_cuda_on_cpu();
  } catch (const BackendUnavailable& e) {
    why = e.what();
    return nullptr;
  }
}

// Runs kernel `name` of `source` on one block of `threads` threads with buffers `in` (floats,
// read) and `out` (floats, written; `out_count` of them), in `order`.
std::vector<float> run_one_block(const std::string& source, const std::string& name, const std::vector<float>& in,
                                 std::size_t out_count, std::int64_t threads, const std::string& order = "forward") {
  test_util::ConfigGuard guard;
  config::set_override("cuda_cpu_thread_order", order);
  auto device = open_cuda_on_cpu();
  auto in_buffer = device->allocate(in.size() * sizeof(float));
  auto out_buffer = device->allocate(out_count * sizeof(float));
  in_buffer->write(bytes_of(in));
  auto module = device->load(source, {name}, "");
  ir::KernelGeometry geometry;
  geometry.block = {threads, 1, 1};
  geometry.grid = {1, 1, 1};
  device->launch(*module, 0, geometry, std::vector<KernelArg>{out_buffer.get(), in_buffer.get()});
  device->synchronize();
  return read_as<float>(*out_buffer);
}

// The message of the RuntimeError running `source` throws, or "" when it runs.
std::string failure_of(const std::string& source, const std::string& name, std::int64_t threads) {
  try {
    run_one_block(source, name, std::vector<float>(64, 1.0f), 64, threads);
  } catch (const RuntimeError& e) {
    return e.what();
  }
  return "";
}

TEST(CudaOnCpu, PassesTheDeviceChecks) {
  std::string why;
  auto device = device_or_skip(why);
  if (!device) GTEST_SKIP() << "no C++ compiler: " << why;
  EXPECT_EQ(device->api(), "cuda-cpu");
  EXPECT_EQ(device->limits().warp_size, 32);
  EXPECT_FALSE(device->mma_formats().empty()) << "it stands for an sm_90 device";
  EXPECT_TRUE(device->async_copy());
  check_buffers(*device);
  const fs::path cache = fresh_cache_dir("cuda_cpu_hit");
  auto first = check_axpy(*device, cuda_axpy_source(), cache);
  EXPECT_FALSE(first->from_cache());
  auto host = backends::make_interpreter_backend()->allocate(64);
  check_launch_errors(*device, *first, *host);
  auto other = open_cuda_on_cpu();
  EXPECT_TRUE(check_axpy(*other, cuda_axpy_source(), cache)->from_cache());
  EXPECT_THROW(other->launch(*first, 0, ir::KernelGeometry{}, {}), RuntimeUsageError) << "another device's module";
}

TEST(CudaOnCpu, ACompileErrorCarriesTheCompilersOutputAndCommand) {
  test_util::ConfigGuard guard;
  // The cc backend's rounding keys do not reach the module: it rounds as NVRTC's --fmad=false.
  config::set_override("cc_fp_contract", "fast");
  config::set_override("cc_fast_math", "true");
  std::string why;
  auto device = device_or_skip(why);
  if (!device) GTEST_SKIP() << "no C++ compiler: " << why;
  try {
    device->load("extern \"C\" __global__ void broken(float* x) { x[0] = undeclared_name; }\n", {"broken"}, "");
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("undeclared_name"), std::string::npos) << m;
    EXPECT_NE(m.find("broken.cu:1"), std::string::npos) << "the .cu file's own line: " << m;
    EXPECT_NE(m.find("-ffp-contract=off"), std::string::npos) << m;
    EXPECT_EQ(m.find("-ffp-contract=fast"), std::string::npos) << m;
    EXPECT_EQ(m.find("-ffast-math"), std::string::npos) << m;
  }
}

// Each thread writes its cell of a shared array, then reads its mirror: right only if every
// write happened before every read.
const char* const kMirror = R"(extern "C" __global__ void mirror(float* y, const float* x) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  s[t] = x[t] * 2.0f;
  BARRIER
  y[t] = s[63 - t];
}
)";

std::string with_barrier(bool barrier) {
  std::string s = kMirror;
  s.replace(s.find("BARRIER"), 7, barrier ? "__syncthreads();" : "");
  return s;
}

TEST(CudaOnCpu, ABarrierOrdersEveryThreadsWritesBeforeAnyRead) {
  std::string why;
  if (!device_or_skip(why)) GTEST_SKIP() << "no C++ compiler: " << why;
  std::vector<float> x(64), expected(64);
  for (int t = 0; t < 64; ++t) x[static_cast<std::size_t>(t)] = static_cast<float>(t);
  for (int t = 0; t < 64; ++t) expected[static_cast<std::size_t>(t)] = 2.0f * static_cast<float>(63 - t);
  for (const char* order : {"forward", "reverse"}) {
    EXPECT_EQ(run_one_block(with_barrier(true), "mirror", x, 64, 64, order), expected) << order;
    // Without the barrier the race shows: a thread reads its mirror before (forward: the upper
    // half, reverse: the lower half) the mirror thread wrote it.
    EXPECT_NE(run_one_block(with_barrier(false), "mirror", x, 64, 64, order), expected) << order;
  }
}

TEST(CudaOnCpu, SharedMemoryHoldsNoPlausibleValueBeforeAThreadWritesIt) {
  std::string why;
  if (!device_or_skip(why)) GTEST_SKIP() << "no C++ compiler: " << why;
  // Each of two blocks reads a cell no thread wrote, then writes it: the second block must not
  // see the first block's value either.
  const std::string source = R"(extern "C" __global__ void unwritten(float* y, const float* x) {
  __shared__ float s[4];
  y[blockIdx.x] = s[1];
  s[1] = x[0];
}
)";
  auto device = open_cuda_on_cpu();
  auto x = device->allocate(4), y = device->allocate(8);
  x->write(bytes_of(std::vector<float>{5.0f}));
  auto module = device->load(source, {"unwritten"}, "");
  ir::KernelGeometry geometry;
  geometry.block = {1, 1, 1};
  geometry.grid = {2, 1, 1};
  device->launch(*module, 0, geometry, std::vector<KernelArg>{y.get(), x.get()});
  for (const float v : read_as<float>(*y)) EXPECT_TRUE(std::isnan(v)) << v;
}

TEST(CudaOnCpu, ABarrierSomeThreadsSkipIsARuntimeErrorNamingItsLine) {
  std::string why;
  if (!device_or_skip(why)) GTEST_SKIP() << "no C++ compiler: " << why;
  const std::string skipped = R"(extern "C" __global__ void skip(float* y, const float* x) {
  if (threadIdx.x < 16) {
    __syncthreads();
  }
  y[threadIdx.x] = x[threadIdx.x];
}
)";
  const std::string message = failure_of(skipped, "skip", 32);
  EXPECT_NE(message.find("kernel skip"), std::string::npos) << message;
  EXPECT_NE(message.find("line 3"), std::string::npos) << message;
  EXPECT_NE(message.find("thread (16, 0, 0) has returned"), std::string::npos) << message;
  EXPECT_NE(message.find("a barrier not every thread of the block reaches"), std::string::npos) << message;

  const std::string two_sites = R"(extern "C" __global__ void sites(float* y, const float* x) {
  if (threadIdx.x % 2 == 0)
    __syncthreads();
  else
    __syncthreads();
  y[threadIdx.x] = x[threadIdx.x];
}
)";
  const std::string sites = failure_of(two_sites, "sites", 4);
  EXPECT_NE(sites.find("waits at __syncthreads (line 3) but thread (1, 0, 0) waits at __syncthreads (line 5)"),
            std::string::npos)
      << sites;
}

// Two warps each sum their 32 values by shuffles (the tree of a block reduction's last steps).
const char* const kWarpSum = R"(extern "C" __global__ void warp_sum(float* y, const float* x) {
  const unsigned int lane = threadIdx.x % 32;
  float v = x[threadIdx.x];
  if (lane < LANES) for (unsigned int s = 16; s > 0; s >>= 1) {
    const float o = __shfl_down_sync(MASK, v, s);
    if (lane < s) v = v + o;
  }
  if (lane == 0) y[threadIdx.x / 32] = v;
}
)";

std::string with_mask(const char* mask, int lanes = 32) {
  std::string s = kWarpSum;
  s.replace(s.find("MASK"), 4, mask);
  s.replace(s.find("LANES"), 5, std::to_string(lanes));
  return s;
}

TEST(CudaOnCpu, WarpShufflesReadTheLaneDeltaAbove) {
  std::string why;
  if (!device_or_skip(why)) GTEST_SKIP() << "no C++ compiler: " << why;
  std::vector<float> x(64);
  float first = 0, second = 0;
  for (int t = 0; t < 64; ++t) {
    x[static_cast<std::size_t>(t)] = static_cast<float>(t * t % 37);
    (t < 32 ? first : second) += x[static_cast<std::size_t>(t)];
  }
  for (const char* order : {"forward", "reverse"})
    EXPECT_EQ(run_one_block(with_mask("0xffffffffu"), "warp_sum", x, 2, 64, order), (std::vector<float>{first, second}))
        << order;
  // Lanes 0-15 shuffle among themselves: lane 0 reads lane 16's value, which the mask does not
  // provide (undefined on a GPU): a NaN, never a number.
  const auto half = run_one_block(with_mask("0x0000ffffu", 16), "warp_sum", x, 2, 64);
  EXPECT_TRUE(std::isnan(half[0])) << half[0];
  // A lane calling with a mask that leaves it out.
  EXPECT_NE(failure_of(with_mask("0x0000ffffu"), "warp_sum", 32).find("does not name its own lane"), std::string::npos);
  // A mask naming lanes past a block of 16 threads.
  const std::string message = failure_of(with_mask("0xffffffffu"), "warp_sum", 16);
  EXPECT_NE(message.find("names lane 16"), std::string::npos) << message;
}

TEST(CudaOnCpu, AShuffleSomeLanesOfItsMaskNeverReachIsARuntimeError) {
  std::string why;
  if (!device_or_skip(why)) GTEST_SKIP() << "no C++ compiler: " << why;
  const std::string divergent = R"(extern "C" __global__ void divergent(float* y, const float* x) {
  float v = x[threadIdx.x];
  if (threadIdx.x < 8) v = v + __shfl_down_sync(0xffffffffu, v, 1u);
  y[threadIdx.x] = v;
}
)";
  const std::string message = failure_of(divergent, "divergent", 32);
  EXPECT_NE(message.find("__shfl_down_sync (line 3)"), std::string::npos) << message;
  EXPECT_NE(message.find("a warp operation every lane of its mask must reach"), std::string::npos) << message;
}

// float4 loads and stores as the CUDA dialect prints them: at a 16-byte multiple they move the
// cells; one float off, a GPU faults (a misaligned address), and so does cuda-cpu, naming the
// line of a load (the host compiler alone may split the access into scalar moves and not fault).
TEST(CudaOnCpu, AMisalignedVectorAccessIsARuntimeErrorNamingIt) {
  std::string why;
  if (!device_or_skip(why)) GTEST_SKIP() << "no C++ compiler: " << why;
  const auto kernel = [](int load_offset, int store_offset) {
    return R"(extern "C" __global__ void lanes(float* y, const float* x) {
  const int i = 4 * threadIdx.x;
  const float4 v = *(const float4 *)&x[i + )" + std::to_string(load_offset) + R"(];
  *(float4 *)&y[i + )" + std::to_string(store_offset) + R"(] = make_float4(v.w, v.z, v.y, v.x);
}
)";
  };
  std::vector<float> in(64);
  for (std::size_t k = 0; k < in.size(); ++k) in[k] = static_cast<float>(k);
  const std::vector<float> out = run_one_block(kernel(0, 0), "lanes", in, 64, 8);
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 4), (std::vector<float>{3, 2, 1, 0}));
  std::string message = failure_of(kernel(1, 0), "lanes", 8);
  EXPECT_NE(message.find("a 16-byte vector load (line 3)"), std::string::npos) << message;
  EXPECT_NE(message.find("not 16-byte aligned (a misaligned address on a GPU)"), std::string::npos) << message;
  message = failure_of(kernel(0, 2), "lanes", 8);
  EXPECT_NE(message.find("a 16-byte vector store"), std::string::npos) << message;
}

// One warp multiplies a 16 x 16 bf16 A by a 16 x 16 bf16 B (row-major, k by n) with the
// canonical addressing: lane l names row l % 16, columns from 8 * (l / 16), of A for ldmatrix
// .x4 (the A fragment) and of B for ldmatrix .x4.trans (the B fragments of the two 8-column
// halves), then stores the accumulators where the C fragment places them (rows l / 4 and
// l / 4 + 8, columns 2 (l % 4) and the next).
const char* const kMma = R"(extern "C" __global__ void mma16(float* y, const float* x) {
  __shared__ __align__(16) unsigned short a[256];
  __shared__ __align__(16) unsigned short b[256];
  const int l = threadIdx.x;
  for (int k = l; k < 256; k += 32) {
    a[k] = (unsigned short)(__float_as_int(x[k]) >> 16);
    b[k] = (unsigned short)(__float_as_int(x[256 + k]) >> 16);
  }
  __syncthreads();
  unsigned int fa[4], fb[4];
  cannl_ldsm_x4(fa, a, (l % 16) * 16 + 8 * (l / 16));
  cannl_ldsm_x4_trans(fb, b, (l % 16) * 16 + 8 * (l / 16));
  for (int half = 0; half < 2; ++half) {
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    cannl_mma_bf16(c, fa, fb + 2 * half);
    for (int e = 0; e < 4; ++e) y[(l / 4 + 8 * (e / 2)) * 16 + 8 * half + 2 * (l % 4) + e % 2] = c[e];
  }
}
)";

TEST(CudaOnCpu, LdmatrixAndMmaMultiplyAsThePtxIsaLaysOutTheirFragments) {
  std::string why;
  if (!device_or_skip(why)) GTEST_SKIP() << "no C++ compiler: " << why;
  // Small integers: exact in bf16, and every sum exact in f32.
  std::vector<float> x(512);
  for (int k = 0; k < 512; ++k) x[static_cast<std::size_t>(k)] = static_cast<float>((k * 7 + k / 16 * 3) % 11 - 5);
  std::vector<float> expected(256, 0.0f);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      for (int k = 0; k < 16; ++k)
        expected[static_cast<std::size_t>(i * 16 + j)] +=
            x[static_cast<std::size_t>(i * 16 + k)] * x[static_cast<std::size_t>(256 + k * 16 + j)];
  for (const char* order : {"forward", "reverse"}) EXPECT_EQ(run_one_block(kMma, "mma16", x, 256, 32, order), expected) << order;
  // ldmatrix reads 16-byte rows: a row address off by one element is an error, not a guess.
  std::string misaligned = kMma;
  misaligned.replace(misaligned.find("(l % 16) * 16 + 8 * (l / 16));"), 31, "(l % 16) * 16 + 8 * (l / 16) + 1);");
  const std::string message = failure_of(misaligned, "mma16", 32);
  EXPECT_NE(message.find("not 16-byte aligned"), std::string::npos) << message;
}

// A thread copies 16 bytes of which the source gives 8 (the rest zeros), reads the slice before
// and after waiting.
const char* const kCopy = R"(extern "C" __global__ void copy(float* y, const float* x) {
  __shared__ __align__(16) float s[4];
  s[0] = -1.0f; s[1] = -1.0f; s[2] = -1.0f; s[3] = -1.0f;
  cannl_cp_async16(s, x + OFFSET, 8);
  cannl_cp_async_commit();
  y[0] = s[0];
  cannl_cp_async_wait_all();
  y[1] = s[0]; y[2] = s[1]; y[3] = s[2]; y[4] = s[3];
}
)";

std::string with_offset(int offset) {
  std::string s = kCopy;
  s.replace(s.find("OFFSET"), 6, std::to_string(offset));
  return s;
}

TEST(CudaOnCpu, ACpAsyncLandsWhenItsThreadWaits) {
  std::string why;
  if (!device_or_skip(why)) GTEST_SKIP() << "no C++ compiler: " << why;
  const std::vector<float> x{3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f};
  // Forward: the copy lands at the wait (the latest legal moment); reverse: at once (the earliest).
  EXPECT_EQ(run_one_block(with_offset(4), "copy", x, 5, 1), (std::vector<float>{-1.0f, 7.0f, 8.0f, 0.0f, 0.0f}));
  EXPECT_EQ(run_one_block(with_offset(4), "copy", x, 5, 1, "reverse"), (std::vector<float>{7.0f, 7.0f, 8.0f, 0.0f, 0.0f}));
  const std::string message = failure_of(with_offset(1), "copy", 1);
  EXPECT_NE(message.find("not 16-byte aligned"), std::string::npos) << message;
  // A thread that returns with copies in flight never waited for what it staged.
  std::string unwaited = with_offset(4);
  unwaited.replace(unwaited.find("cannl_cp_async_wait_all();"), 26, "");
  const std::string never = failure_of(unwaited, "copy", 1);
  EXPECT_NE(never.find("returned with 1 cp.async copies it never waited for"), std::string::npos) << never;
}

TEST(CudaOnCpu, ALaunchWithTheWrongArgumentCountIsARuntimeUsageError) {
  std::string why;
  auto device = device_or_skip(why);
  if (!device) GTEST_SKIP() << "no C++ compiler: " << why;
  auto buffer = device->allocate(64);
  auto module = device->load(cuda_axpy_source(), {"axpy2d"}, "");
  ir::KernelGeometry geometry;
  geometry.block = {1, 1, 1};
  geometry.grid = {1, 1, 1};
  try {
    device->launch(*module, 0, geometry, std::vector<KernelArg>{buffer.get(), buffer.get()});
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("2 arguments for 6 parameters"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cannl::test_gpu
