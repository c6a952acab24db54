// The CUDA device. Without a driver (CI, most machines) opening one is a BackendUnavailable
// naming libcuda.so.1; with a driver and a GPU the checks every device passes run on device 0.
#include <gtest/gtest.h>

#include "backends/gpu/api_library.h"
#include "backends/gpu/cuda_driver_api.h"
#include "backends/gpu/device_checks.h"
#include "cannl/backends/backend.h"

namespace cannl::test_gpu {
namespace {

// Device 0, or nullptr with the reason in `why`.
std::shared_ptr<Device> cuda_or_reason(std::string& why) {
  try {
    return backends::gpu::open_cuda(0);
  } catch (const BackendUnavailable& e) {
    why = e.what();
    return nullptr;
  }
}

TEST(CudaOpen, WithoutADriverIsBackendUnavailableNamingLibcuda) {
  try {
    auto device = backends::gpu::open_cuda(0);
    GTEST_SKIP() << "a CUDA device is present: " << device->description();
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("libcuda.so.1"), std::string::npos) << e.what();
  }
}

TEST(CudaOpen, EveryDriverEntryPointBindsAgainstTheToolkitsStubLibrary) {
  // The toolkit's stub libcuda.so exports every driver function (under its versioned name) and
  // initializes nothing: binding against it checks each name cannl asks for without a GPU.
  std::string stub;
  for (const auto& candidate : backends::gpu::cuda_toolkit_candidates({"stubs/libcuda.so"}))
    if (candidate.front() == '/' && fs::exists(candidate)) {
      stub = candidate;
      break;
    }
  if (stub.empty()) GTEST_SKIP() << "no CUDA toolkit with a stub libcuda.so";
  // A real driver, when there is one, is loaded first, so the stub shadows nothing.
  std::string why;
  if (cuda_or_reason(why)) GTEST_SKIP() << "a CUDA device is present";
  try {
    backends::gpu::CudaDriverApi::load({stub});
    FAIL() << "expected BackendUnavailable";
  } catch (const BackendUnavailable& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find("has no function"), std::string::npos) << message;
    EXPECT_NE(message.find("CUDA_ERROR_STUB_LIBRARY"), std::string::npos) << message;
  }
}

TEST(CudaOpen, ADeviceThatDoesNotExistIsBackendUnavailable) {
  std::string why;
  if (!cuda_or_reason(why)) GTEST_SKIP() << "no CUDA device: " << why;
  try {
    backends::gpu::open_cuda(4096);
    FAIL() << "expected BackendUnavailable";
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device 4096"), std::string::npos) << e.what();
  }
}

TEST(CudaDevice, PassesTheDeviceChecks) {
  std::string why;
  auto device = cuda_or_reason(why);
  if (!device) GTEST_SKIP() << "no CUDA device: " << why;
  EXPECT_EQ(device->api(), "cuda");
  EXPECT_NE(device->description().find("(sm_"), std::string::npos) << device->description();
  const ir::GpuLimits& limits = device->limits();
  EXPECT_GE(limits.max_threads_per_block, 256);
  EXPECT_EQ(limits.warp_size, 32);
  EXPECT_GE(limits.max_shared_bytes, 16 * 1024);
  EXPECT_GT(limits.max_grid_dims[0], 65535);
  check_buffers(*device);

  const fs::path cache = fresh_cache_dir("cuda_hit");
  auto first = check_axpy(*device, cuda_axpy_source(), cache);
  EXPECT_FALSE(first->from_cache());
  auto host = backends::make_interpreter_backend()->allocate(64);
  check_launch_errors(*device, *first, *host);
  auto other = backends::gpu::open_cuda(0);  // a second stream on the same primary context
  EXPECT_TRUE(check_axpy(*other, cuda_axpy_source(), cache)->from_cache());
  EXPECT_THROW(other->launch(*first, 0, ir::KernelGeometry{}, {}), RuntimeUsageError) << "another device's module";
}

TEST(CudaDevice, ACompileErrorCarriesNvrtcsLog) {
  std::string why;
  auto device = cuda_or_reason(why);
  if (!device) GTEST_SKIP() << "no CUDA device: " << why;
  try {
    device->load("extern \"C\" __global__ void broken(float* c) { c[0] = undeclared_name_xyz; }\n", {"broken"}, "");
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("undeclared_name_xyz"), std::string::npos) << e.what();
  }
}

TEST(CudaDevice, AKernelFaultIsARuntimeErrorNamingTheKernel) {
  std::string why;
  auto device = cuda_or_reason(why);
  if (!device) GTEST_SKIP() << "no CUDA device: " << why;
  // A fault poisons the context for the whole process: run it in a child so that the other
  // tests keep a working device; a child that re-executes the test binary, since CUDA does not
  // survive a fork after it initialized.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto own = backends::gpu::open_cuda(0);
        auto module = own->load(
            "extern \"C\" __global__ void wild_write(float* c) { ((float*)0x10)[threadIdx.x] = c[0]; }\n",
            {"wild_write"}, "");
        auto buffer = own->allocate(4);
        const std::vector<KernelArg> args{buffer.get()};
        own->launch(*module, 0, ir::KernelGeometry{}, args);
        try {
          own->synchronize();
        } catch (const RuntimeError& e) {
          const std::string message = e.what();
          std::exit(message.find("wild_write") != std::string::npos ? 3 : 4);
        }
        std::exit(5);
      },
      ::testing::ExitedWithCode(3), "");
}

}  // namespace
}  // namespace cannl::test_gpu
