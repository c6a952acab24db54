// The OpenCL device on whatever OpenCL platform 0 is (PoCL in CI): buffers, a hand-written
// kernel with a `long` static and a guarded 2-D launch, build errors with the compiler's log,
// and the module cache (a hit on a second device, a damaged entry compiled again). Every test
// skips, saying why, on a machine without an OpenCL platform.
#include <gtest/gtest.h>

#include <fstream>

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
