// The CUDA device on a mock driver (mock_cuda_driver.c, compiled here by the system C compiler):
// the device's calls run on host memory, so the whole CUDA path (context and stream handling,
// kernel parameters and geometry, zeroing, copies, events, NVRTC's cubin through the module
// cache, releases) is checked on machines without a GPU. The mock counts every call a real
// driver would reject; each test expects none, and nothing left alive at the end.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "backends/cc/compile_cache.h"
#include "backends/gpu/cuda_device.h"
#include "backends/gpu/device_checks.h"
#include "backends/gpu/mock_libraries.h"
#include "backends/gpu/module_cache.h"
#include "backends/gpu/nvrtc_api.h"
#include "cannl/backends/backend.h"

namespace cannl::test_gpu {
namespace {

using backends::gpu::CudaDriverApi;
using backends::gpu::LaunchStep;
namespace cuda = backends::gpu::cuda;

const MockDriver* mock_or_reason(std::string& why) { return mock_cuda_driver(why); }

class CudaOnAMockDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    mock_ = mock_or_reason(why);
    if (mock_ == nullptr) GTEST_SKIP() << why;
    errors_before_ = mock_->errors();
  }
  void TearDown() override {
    if (mock_ == nullptr) return;
    EXPECT_EQ(mock_->errors() - errors_before_, 0) << "calls a real driver would reject";
    EXPECT_EQ(mock_->live_objects(), 0) << "allocations, modules, events, streams or contexts not released";
  }
  std::shared_ptr<Device> open() { return backends::gpu::open_cuda_on(*mock_->api, 0); }

  const MockDriver* mock_ = nullptr;
  int errors_before_ = 0;
};

TEST_F(CudaOnAMockDriver, PassesTheDeviceChecks) {
  auto device = open();
  EXPECT_EQ(device->description().rfind("Mock GPU (sm_90), CUDA driver 13.0, NVRTC ", 0), 0u) << device->description();
  EXPECT_EQ(device->limits().max_threads_per_block, 1024);
  EXPECT_EQ(device->limits().max_grid_dims[1], 65535);
  EXPECT_EQ(device->limits().max_shared_bytes, 49152);
  EXPECT_EQ(device->limits().warp_size, 32);
  check_buffers(*device);

  const int launches = mock_->launches();
  const fs::path cache = fresh_cache_dir("cuda_mock_hit");
  auto first = check_axpy(*device, cuda_axpy_source(), cache);
  EXPECT_FALSE(first->from_cache());
  auto host = backends::make_interpreter_backend()->allocate(64);
  check_launch_errors(*device, *first, *host);
  auto other = open();
  EXPECT_TRUE(check_axpy(*other, cuda_axpy_source(), cache)->from_cache());
  EXPECT_EQ(mock_->launches(), launches + 2) << "an empty grid or a rejected launch reaches no driver";
  EXPECT_THROW(other->launch(*first, 0, ir::KernelGeometry{}, {}), RuntimeUsageError) << "another device's module";
}

// Runs `call` on a thread of its own, which has no current context until the device makes one.
void on_a_fresh_thread(const std::function<void()>& call) {
  std::string failure;
  std::thread worker([&] {
    try {
      call();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  worker.join();
  EXPECT_EQ(failure, "");
}

TEST_F(CudaOnAMockDriver, EveryCallMakesTheContextCurrentOnItsThread) {
  std::shared_ptr<Device> device;
  std::unique_ptr<backends::Buffer> a, b, c;
  std::shared_ptr<Module> module;
  std::unique_ptr<backends::gpu::Event> event;
  const std::vector<float> ones(35, 1.0f);
  on_a_fresh_thread([&] { device = open(); });
  on_a_fresh_thread([&] { a = device->allocate(35 * 4); });
  on_a_fresh_thread([&] { b = device->allocate(35 * 4); });
  on_a_fresh_thread([&] { c = device->allocate(35 * 4); });
  on_a_fresh_thread([&] { a->write(bytes_of(ones)); });
  on_a_fresh_thread([&] { device->copy(*b, *a); });
  on_a_fresh_thread([&] { device->fill_zero(*c); });
  on_a_fresh_thread([&] { module = device->load(cuda_axpy_source(), {"axpy2d"}, ""); });
  on_a_fresh_thread([&] {
    const std::vector<KernelArg> args{c.get(), a.get(), b.get(), std::int64_t{2}, std::int64_t{5}, std::int64_t{7}};
    device->launch(*module, 0, {.grid = {2, 5, 1}, .block = {4, 1, 1}}, args);
  });
  on_a_fresh_thread([&] { event = device->record(); });
  on_a_fresh_thread([&] { event->wait(); });
  on_a_fresh_thread([&] { device->synchronize(); });
  on_a_fresh_thread([&] { EXPECT_EQ(read_as<float>(*c), std::vector<float>(35, 3.0f)); });
  on_a_fresh_thread([&] { event.reset(); });
  on_a_fresh_thread([&] { module.reset(); });
  on_a_fresh_thread([&] { a.reset(); });
  on_a_fresh_thread([&] { b.reset(); });
  on_a_fresh_thread([&] { c.reset(); });
  on_a_fresh_thread([&] { device.reset(); });
}

// cannl leaves each thread with the context it found: none, or the caller's own (PyTorch's,
// another library's), also after a call that throws. A device whose calls left its own context
// current would send the caller's next CUDA call to cannl's device.
TEST_F(CudaOnAMockDriver, EveryCallLeavesTheCallersContextCurrent) {
  const CudaDriverApi& api = *mock_->api;
  int another_library = 0;  // a context the mock's devices do not own
  const auto callers_contexts = {static_cast<cuda::CUcontext>(nullptr),
                                 reinterpret_cast<cuda::CUcontext>(&another_library)};
  for (const cuda::CUcontext callers : callers_contexts) {
    ASSERT_EQ(api.cuCtxSetCurrent(callers), 0);
    const auto after = [&](const char* call) {
      cuda::CUcontext now = nullptr;
      ASSERT_EQ(api.cuCtxGetCurrent(&now), 0);
      EXPECT_EQ(now, callers) << "after " << call << (callers == nullptr ? " (none before)" : " (another's before)");
    };
    each_device_call([&] { return open(); }, "", after);
  }
  api.cuCtxSetCurrent(nullptr);
}

// A driver of an older CUDA major version than NVRTC's loads none of its kernels: opening the
// device says so (BackendUnavailable, so that the automatic choice goes on to the next backend).
TEST_F(CudaOnAMockDriver, ADriverOlderThanNvrtcIsBackendUnavailable) {
  backends::gpu::CudaDriverApi old_driver = *mock_->api;
  const int nvrtc_major = std::stoi(backends::gpu::nvrtc_version());
  old_driver.driver_version = (nvrtc_major - 1) * 1000 + 40;
  try {
    (void)backends::gpu::open_cuda_on(old_driver, 0);
    FAIL() << "opened";
  } catch (const BackendUnavailable& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("supports CUDA " + std::to_string(nvrtc_major - 1) + ".4, older than NVRTC " +
                        std::to_string(nvrtc_major) + "."),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("libnvrtc.so." + std::to_string(nvrtc_major - 1)), std::string::npos) << what;
  }
  old_driver.driver_version = nvrtc_major * 1000 + 1000;  // a newer driver runs older NVRTC's kernels
  EXPECT_NO_THROW((void)backends::gpu::open_cuda_on(old_driver, 0));
}

// After a kernel fault every call in the context fails alike: the error says so.
TEST_F(CudaOnAMockDriver, AFaultThatLeavesTheContextUnusableSaysToRestart) {
  for (const int sticky : {backends::gpu::cuda::CUDA_ERROR_ILLEGAL_ADDRESS, backends::gpu::cuda::CUDA_ERROR_LAUNCH_FAILED}) {
    try {
      mock_->api->check(sticky, "cuStreamSynchronize");
      FAIL() << sticky;
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("leaves the CUDA context unusable: restart the process"), std::string::npos)
          << e.what();
    }
  }
  try {
    mock_->api->check(1, "cuMemAlloc");  // CUDA_ERROR_INVALID_VALUE: the context lives on
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()).find("restart"), std::string::npos) << e.what();
  }
}

TEST_F(CudaOnAMockDriver, OutOfMemoryIsAResourceError) {
  auto device = open();
  try {
    device->allocate(std::size_t{1} << 41);
    FAIL() << "expected ResourceError";
  } catch (const ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << e.what();
  }
}

TEST_F(CudaOnAMockDriver, AMissingKernelIsACompileError) {
  auto device = open();
  try {
    device->load(cuda_axpy_source(), {"axpy2d", "absent"}, "");
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("no kernel absent"), std::string::npos) << e.what();
  }
}

TEST_F(CudaOnAMockDriver, ACachedImageTheDriverRefusesIsCompiledAgain) {
  auto device = open();
  const fs::path cache = fresh_cache_dir("cuda_mock_refused");
  // A verified entry holding what no driver loads (the key as CudaDevice::load makes it).
  const auto entry = backends::gpu::module_cache_entry(cache, "axpy2d", "cubin",
                                                       cuda_axpy_source() + "\n" + device->cache_tag());
  backends::gpu::store_cached_module(entry, "not a cubin");
  auto module = check_axpy(*device, cuda_axpy_source(), cache);
  EXPECT_FALSE(module->from_cache());
  EXPECT_TRUE(fs::exists(cache / "quarantine" / entry.file.filename()));
  EXPECT_NE(backends::gpu::read_cached_module(entry), std::optional<std::string>("not a cubin"));
}

// The driver reads as many 8-byte values from the parameter array as the kernel declares,
// whatever the array holds: one argument too many runs the kernel silently, one too few reads past
// the array. cuFuncGetParamInfo (CUDA 12.4) tells the count, so both are refused before the driver
// sees them, a launch and a graph's step alike.
TEST_F(CudaOnAMockDriver, ALaunchWithTheWrongArgumentCountIsARuntimeUsageErrorNamingTheKernel) {
  auto device = open();
  auto module = device->load(cuda_axpy_source(), {"axpy2d"}, "");
  auto buffer = device->allocate(64);
  ir::KernelGeometry geometry;
  geometry.block = {4, 1, 1};
  std::vector<KernelArg> args{buffer.get(), buffer.get(), buffer.get(), std::int64_t{1}, std::int64_t{1},
                              std::int64_t{1}, std::int64_t{1}};
  const int launches = mock_->launches();
  try {
    device->launch(*module, 0, geometry, args);
    FAIL() << "7 arguments for 6 parameters reached the driver";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("axpy2d: 7 arguments for 6 parameters"), std::string::npos) << e.what();
  }
  args.resize(5);
  try {
    device->launch(*module, 0, geometry, args);
    FAIL() << "5 arguments for 6 parameters reached the driver";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("axpy2d: 5 arguments for 6 parameters"), std::string::npos) << e.what();
  }
  const std::vector<LaunchStep> steps{{.kernel = 0, .geometry = geometry, .args = args}};
  std::string why;
  EXPECT_THROW(device->build_graph(*module, steps, "wrong_arity", why), RuntimeUsageError);
  EXPECT_EQ(mock_->launches(), launches);
  device->synchronize();
}

// A block within the device's 1024 threads may still be over the kernel's own limit (a kernel
// whose registers allow only 128 threads a block): a named error before the launch, not the
// driver's CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES.
TEST_F(CudaOnAMockDriver, ABlockOverTheKernelsOwnThreadLimitIsARuntimeUsageErrorNamingIt) {
  mock_->set_kernel_max_threads("axpy2d", 128);
  struct Restore {
    const MockDriver* mock;
    ~Restore() { mock->set_kernel_max_threads("axpy2d", 1024); }
  } restore{mock_};
  check_kernel_thread_limit(*open());
}

}  // namespace
}  // namespace cannl::test_gpu
