// The OpenCL device on whatever OpenCL platform 0 is (PoCL in CI): buffers, a hand-written
// kernel with a `long` static and a guarded 2-D launch, build errors with the compiler's log,
// and the module cache (a hit on a second device, a damaged entry compiled again). Every test
// skips, saying why, on a machine without an OpenCL platform.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>

#include "backends/gpu/device_checks.h"
#include "backends/gpu/opencl_api.h"
#include "cannl/backends/backend.h"

namespace cannl::test_gpu {
namespace {

class OpenClDeviceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    try {
      device_ = backends::gpu::open_opencl(0, 0);
    } catch (const BackendUnavailable& e) {
      unavailable_ = e.what();
    }
  }
  static void TearDownTestSuite() { device_.reset(); }
  void SetUp() override {
    if (!device_) GTEST_SKIP() << "no OpenCL device: " << unavailable_;
  }
  Device& device() { return *device_; }

  static std::shared_ptr<Device> device_;
  static std::string unavailable_;
};
std::shared_ptr<Device> OpenClDeviceTest::device_;
std::string OpenClDeviceTest::unavailable_;

TEST_F(OpenClDeviceTest, DescribesItselfAndItsLimits) {
  EXPECT_EQ(device().api(), "opencl");
  EXPECT_NE(device().description().find("fp64"), std::string::npos) << device().description();
  const ir::GpuLimits& limits = device().limits();
  EXPECT_GT(limits.max_threads_per_block, 0);
  for (int slot = 0; slot < 3; ++slot) {
    EXPECT_GT(limits.max_block_dims[slot], 0);
    EXPECT_GT(limits.max_grid_dims[slot], 0);
  }
  EXPECT_GT(limits.max_shared_bytes, 0);
  EXPECT_EQ(limits.warp_size, 1);
  EXPECT_NE(device().cache_tag().find("-cl-std=CL1.2"), std::string::npos);
}

// OpenCL C 1.2 allows f32 division 2.5 ulp off and sqrt 3 ulp; a device that can round them
// correctly (PoCL reports CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) builds every program asking it to.
TEST_F(OpenClDeviceTest, AsksForCorrectlyRoundedDivisionAndSqrt) {
  EXPECT_NE(device().cache_tag().find("-cl-fp32-correctly-rounded-divide-sqrt"), std::string::npos)
      << device().cache_tag();
}

TEST_F(OpenClDeviceTest, BuffersRoundTripZeroCopyAndWait) { check_buffers(device()); }

TEST_F(OpenClDeviceTest, AnAllocationOverTheDeviceLimitIsAResourceError) {
  try {
    device().allocate(std::size_t{1} << 62);
    FAIL() << "expected ResourceError";
  } catch (const ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("CL_DEVICE_MAX_MEM_ALLOC_SIZE"), std::string::npos) << e.what();
  }
}

TEST_F(OpenClDeviceTest, KernelWithALongStaticAndGuardedTwoDimensionalLaunch) {
  auto module = check_axpy(device(), opencl_axpy_source(), "");
  EXPECT_FALSE(module->from_cache());
  auto host = backends::make_interpreter_backend()->allocate(64);
  check_launch_errors(device(), *module, *host);
}

TEST_F(OpenClDeviceTest, ALaunchWithTheWrongArgumentCountIsARuntimeUsageError) {
  // The kernel object keeps the arguments of its last launch: after a good launch, one argument
  // short would run with the last launch's `cols` rather than fail.
  auto module = check_axpy(device(), opencl_axpy_source(), "");
  auto c = device().allocate(64);
  const std::vector<KernelArg> six{c.get(), c.get(), c.get(), std::int64_t{1}, std::int64_t{1}, std::int64_t{1}};
  const ir::KernelGeometry geometry{.grid = {1, 1, 1}, .block = {1, 1, 1}};
  for (const std::size_t count : {5u, 7u}) {
    std::vector<KernelArg> args(six.begin(), six.begin() + std::min<std::size_t>(count, 6));
    if (count > 6) args.emplace_back(std::int64_t{1});
    try {
      device().launch(*module, 0, geometry, args);
      ADD_FAILURE() << "expected RuntimeUsageError for " << count << " arguments";
    } catch (const RuntimeUsageError& e) {
      EXPECT_NE(std::string(e.what()).find("OpenCL launch of axpy2d: " + std::to_string(count) + " arguments for 6 parameters"),
                std::string::npos) << e.what();
    }
  }
  device().synchronize();
}

// A kernel's registers or local memory may allow fewer work-items a work-group than the device:
// CL_KERNEL_WORK_GROUP_SIZE says so. PoCL answers its device limit for every kernel, so a table
// whose query answers 128 stands in for a driver that does not.
TEST_F(OpenClDeviceTest, AWorkGroupOverTheKernelsOwnLimitIsARuntimeUsageErrorNamingIt) {
  using namespace backends::gpu::opencl;
  static backends::gpu::OpenClApi narrow = backends::gpu::OpenClApi::get();
  narrow.clGetKernelWorkGroupInfo = [](cl_kernel, cl_device_id, cl_info name, std::size_t size, void* value,
                                       std::size_t* size_ret) -> cl_int {
    if (name != CL_KERNEL_WORK_GROUP_SIZE || size != sizeof(std::size_t) || size_ret != nullptr) return -30;
    *static_cast<std::size_t*>(value) = 128;
    return CL_SUCCESS;
  };
  check_kernel_thread_limit(*backends::gpu::open_opencl_through(narrow, 0, 0), opencl_axpy_source());
}

TEST_F(OpenClDeviceTest, ABuildErrorIsACompileErrorWithTheBuildLog) {
  const std::string source = "__kernel void broken(__global float* c) { c[0] = undeclared_name_xyz; }\n";
  try {
    device().load(source, {"broken"}, "");
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("build log"), std::string::npos) << message;
    EXPECT_NE(message.find("undeclared_name_xyz"), std::string::npos) << message;
    EXPECT_NE(message.find("broken"), std::string::npos) << message;
  }
}

TEST_F(OpenClDeviceTest, AMissingKernelIsACompileError) {
  const std::string source = "__kernel void present(__global float* c) { c[0] = 1.0f; }\n";
  try {
    device().load(source, {"present", "absent"}, "");
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("no kernel absent"), std::string::npos) << e.what();
  }
}

TEST_F(OpenClDeviceTest, ASecondLoadOnAnotherDeviceComesFromTheModuleCache) {
  const fs::path cache = fresh_cache_dir("opencl_hit");
  auto first = check_axpy(device(), opencl_axpy_source(), cache);
  EXPECT_FALSE(first->from_cache());
  ASSERT_EQ(cache_entries(cache).size(), 1u);
  // A second device is a new context: only the binary on disk can spare it the compile.
  auto other = backends::gpu::open_opencl(0, 0);
  auto second = check_axpy(*other, opencl_axpy_source(), cache);
  EXPECT_TRUE(second->from_cache());
  EXPECT_EQ(cache_entries(cache).size(), 1u);
  // Another source is another entry.
  auto third = device().load(opencl_axpy_source() + "// another\n", {"axpy2d"}, cache);
  EXPECT_FALSE(third->from_cache());
  EXPECT_EQ(cache_entries(cache).size(), 2u);
}

TEST_F(OpenClDeviceTest, ADamagedCacheEntryIsQuarantinedAndCompiledAgain) {
  const fs::path cache = fresh_cache_dir("opencl_damaged");
  device().load(opencl_axpy_source(), {"axpy2d"}, cache);
  const auto entries = cache_entries(cache);
  ASSERT_EQ(entries.size(), 1u);
  const auto size = fs::file_size(entries[0]);
  {
    std::ofstream out(entries[0], std::ios::binary | std::ios::trunc);
    out << std::string(static_cast<std::size_t>(size), 'x');  // same size, other bytes
  }
  auto module = check_axpy(device(), opencl_axpy_source(), cache);
  EXPECT_FALSE(module->from_cache());
  EXPECT_TRUE(fs::exists(cache / "quarantine" / entries[0].filename()));
  EXPECT_TRUE(device().load(opencl_axpy_source(), {"axpy2d"}, cache)->from_cache()) << "the rebuilt entry is good";
}

TEST_F(OpenClDeviceTest, WorkgroupLocalMemoryBarriersAndDoubles) {
  // A block sums its 64 elements in local memory (a tree with a barrier per level) into a
  // double: the shape of the GPU schedule's block reductions, on the device's own launch.
  const std::string source = R"(#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void block_sums(__global double* sums, __global const float* x, long n) {
  __local double partial[64];
  long i = (long)get_group_id(0) * 64 + (long)get_local_id(0);
  partial[get_local_id(0)] = i < n ? (double)x[i] : 0.0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int width = 32; width > 0; width /= 2) {
    if ((int)get_local_id(0) < width) partial[get_local_id(0)] += partial[get_local_id(0) + width];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (get_local_id(0) == 0) sums[get_group_id(0)] = partial[0];
}
)";
  constexpr std::int64_t n = 200, blocks = 4;
  std::vector<float> x(n);
  for (std::int64_t k = 0; k < n; ++k) x[k] = static_cast<float>(k);
  auto x_buffer = device().allocate(n * sizeof(float));
  x_buffer->write(bytes_of(x));
  auto sums = device().allocate(blocks * sizeof(double));
  auto module = device().load(source, {"block_sums"}, "");
  ir::KernelGeometry geometry;
  geometry.grid = {blocks, 1, 1};
  geometry.block = {64, 1, 1};
  geometry.shared_bytes = 64 * sizeof(double);
  const std::vector<KernelArg> args{sums.get(), x_buffer.get(), std::int64_t{n}};
  device().launch(*module, 0, geometry, args);
  const auto got = read_as<double>(*sums);
  for (std::int64_t b = 0; b < blocks; ++b) {
    double expected = 0;
    for (std::int64_t k = b * 64; k < std::min(n, (b + 1) * 64); ++k) expected += static_cast<double>(k);
    EXPECT_EQ(got[b], expected) << "block " << b;
  }
}

// A kernel of the default GPU schedule's fuzzer (batch 20, trimmed): every thread writes its own
// cell of t1 and then reads it back for t3. PoCL 3.1's default work-group method ("loopvec",
// LLVM 15's vectorizer over the work-group's threads) gave 12 of the 16 cells of t3 from t1's old
// values; the device opens PoCL with "loops" (opencl_pocl_work_group_method), and this must hold
// whatever the platform.
TEST_F(OpenClDeviceTest, AThreadReadsBackItsOwnEarlierWrite) {
  const std::string source = R"(float cannl_fminf(float a, float b) {
  const int ia = as_int(a), ib = as_int(b);
  const int take_a = (a < b) | (b != b) | ((a == b) & (ia < 0));
  const int m = -(int)(take_a != 0);
  return as_float((ia & m) | (ib & ~m));
}
__kernel __attribute__((reqd_work_group_size(4, 4, 1))) void own_writes(
    __global float *u_out,
    __global float *restrict u_in,
    __global float *t1,
    __global float *restrict x,
    __global float *t2,
    __global float *t3,
    __global float *range4,
    __global float *t6,
    __global float *restrict y,
    __global float *restrict z,
    __global float *t7,
    __global float *sel8,
    __global float *restrict w) {
  {
    const int i0 = (int)get_local_id(1);
    if (i0 < 1) {
      {
        const int i1 = (int)get_local_id(0);
        u_out[i1] = u_in[i1];
      }
    }
  }
  {
    const int i2 = (int)get_local_id(1);
    {
      const int i3 = (int)get_local_id(0);
      t1[((i2)*4 + i3)] = (x[((2)*4 + i2)] + x[((i3)*4 + i2)]);
    }
  }
  {
    const int i4 = (int)get_local_id(1);
    {
      const int i5 = (int)get_local_id(0);
      t2[((i4)*4 + i5)] = x[((i5)*4 + i4)];
    }
  }
  {
    const int i6 = (int)get_local_id(1);
    {
      const int i7 = (int)get_local_id(0);
      t3[((i6)*4 + i7)] = cannl_fminf(x[((i7)*4 + i6)], t1[((i6)*4 + i7)]);
    }
  }
  {
    const int i8 = (int)get_local_id(1);
    if (i8 < 1) {
      {
        const int i9 = (int)get_local_id(0);
        range4[i9] = (float)i9;
      }
    }
  }
  {
    const int i10 = (int)get_local_id(1);
    if (i10 < 3) {
      {
        const int i11 = (int)get_local_id(0);
        t6[(((i10)*4 + i11)*1 + 0)] = cannl_fminf(y[((0)*3 + i10)], z[((i11)*1 + 0)]);
      }
    }
  }
  {
    const int i12 = (int)get_local_id(1);
    if (i12 < 1) {
      {
        const int i13 = (int)get_local_id(0);
        t7[((0)*4 + i13)] = (z[((i13)*1 + 0)] * z[((i13)*1 + 0)]);
      }
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  {
    const int i14 = (int)get_local_id(1);
    if (i14 < 3) {
      {
        const int i15 = (int)get_local_id(0);
        sel8[((i14)*4 + i15)] = ((float)(w[i14] == range4[i15]));
      }
    }
  }
}
)";
  constexpr int kBuffers = 13, kT1 = 2, kX = 3, kT3 = 5;
  std::vector<std::unique_ptr<backends::Buffer>> buffers;
  std::vector<KernelArg> args;
  std::vector<float> x;
  for (int b = 0; b < kBuffers; ++b) {
    std::vector<float> values(16);
    for (int k = 0; k < 16; ++k) values[k] = static_cast<float>((k * 7 + 3 * b) % 13) / 4 - 1.5f;
    if (b == kX) x = values;
    buffers.push_back(device().allocate(values.size() * sizeof(float)));
    buffers.back()->write(bytes_of(values));
    args.emplace_back(static_cast<const backends::Buffer*>(buffers.back().get()));
  }
  auto module = device().load(source, {"own_writes"}, "");
  ir::KernelGeometry geometry;
  geometry.grid = {1, 1, 1};
  geometry.block = {4, 4, 1};
  device().launch(*module, 0, geometry, args);
  const auto t1 = read_as<float>(*buffers[kT1]);
  const auto t3 = read_as<float>(*buffers[kT3]);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      const float written = x[8 + i] + x[j * 4 + i];
      EXPECT_EQ(t1[i * 4 + j], written) << "t1[" << i << ", " << j << "]";
      EXPECT_EQ(t3[i * 4 + j], std::min(x[j * 4 + i], written)) << "t3[" << i << ", " << j << "]";
    }
  }
}

// A kernel of the hand-made annotations' fuzzer (900 annotations a batch, seed 0, batch 22;
// trimmed): a serial loop ending in a barrier, around a loop holding an `if` its iterations do
// not change. PoCL 3.1's optimizer (in every work-group method) gave wrong values in 12 of the
// 18 cells; the device builds with -cl-opt-disable on PoCL (opencl_pocl_optimize), and this must
// hold whatever the platform.
TEST_F(OpenClDeviceTest, ALoopInvariantIfInALoopBeforeABarrier) {
  const std::string source = R"(__kernel __attribute__((reqd_work_group_size(1, 3, 1))) void invariant_if(
    __global float *in2, __global float *in0, __global float *out, __global float *in1) {
  for (int a = 0; a < 2; ++a) {
    const int b = (int)get_local_id(1);
    for (int c = 0; c < 3; ++c) {
      float v = fmin(in0[c], in2[(a * 3 + b) * 3 + c]);
      for (int k = 0; k < 3; ++k) {
        if (c == 1) {
          v = in2[(3 + b) * 3 + k] + in1[0];
        }
      }
      out[(a * 3 + b) * 3 + c] = fmax(in0[c], v);
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  }
}
)";
  std::vector<float> in2(18), in0{-1.75f, -2.0f, 1.25f}, in1{1.5f};
  for (int k = 0; k < 18; ++k) in2[k] = static_cast<float>((k * 5) % 16 - 8) / 4;
  std::vector<std::unique_ptr<backends::Buffer>> buffers;
  std::vector<KernelArg> args;
  for (const std::vector<float>* values : {&in2, &in0, &in2, &in1}) {
    buffers.push_back(device().allocate(values->size() * sizeof(float)));
    buffers.back()->write(bytes_of(*values));
    args.emplace_back(static_cast<const backends::Buffer*>(buffers.back().get()));
  }
  auto module = device().load(source, {"invariant_if"}, "");
  ir::KernelGeometry geometry;
  geometry.block = {1, 3, 1};
  device().launch(*module, 0, geometry, args);
  const auto out = read_as<float>(*buffers[2]);
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 3; ++b) {
      for (int c = 0; c < 3; ++c) {
        const float v = c == 1 ? in2[(3 + b) * 3 + 2] + in1[0] : std::min(in0[c], in2[(a * 3 + b) * 3 + c]);
        EXPECT_EQ(out[(a * 3 + b) * 3 + c], std::max(in0[c], v)) << "out[" << a << ", " << b << ", " << c << "]";
      }
    }
  }
}

TEST(OpenClOpen, AMissingPlatformOrDeviceIsBackendUnavailable) {
  try {
    backends::gpu::open_opencl(0, 0);
  } catch (const BackendUnavailable& e) {
    GTEST_SKIP() << "no OpenCL device: " << e.what();
  }
  try {
    backends::gpu::open_opencl(99, 0);
    FAIL() << "expected BackendUnavailable";
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("no OpenCL platform 99"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("0: "), std::string::npos) << "lists the platforms: " << e.what();
  }
  try {
    backends::gpu::open_opencl(0, 99);
    FAIL() << "expected BackendUnavailable";
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("no OpenCL device 99"), std::string::npos) << e.what();
  }
}

TEST(OpenClOpen, AMissingLibraryIsBackendUnavailableNamingIt) {
  try {
    backends::gpu::OpenClApi::load({"libcannl-no-such-opencl.so.1", "/nonexistent/libOpenCL.so.1"});
    FAIL() << "expected BackendUnavailable";
  } catch (const BackendUnavailable& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("OpenCL"), std::string::npos) << message;
    EXPECT_NE(message.find("libcannl-no-such-opencl.so.1"), std::string::npos) << message;
    EXPECT_NE(message.find("/nonexistent/libOpenCL.so.1"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace cannl::test_gpu
