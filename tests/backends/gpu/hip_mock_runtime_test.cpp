// The HIP device on a mock runtime (mock_hip_runtime.c, compiled here by the system C compiler):
// the device's calls run on host memory, so the whole HIP path (the current device per thread,
// the stream, kernel parameters and geometry, zeroing, copies, events, hiprtc's code object
// through the module cache, the printf buffer, releases) is checked on machines without an AMD
// GPU. The mock counts every call a real runtime would reject; each test expects none, and
// nothing left alive at the end.
//
// Each test runs in a child process (a death test that re-executes this binary), since hiprtc's
// comgr and PoCL's clang, which the OpenCL tests of this binary load, abort one process together.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include "backends/cc/compile_cache.h"
#include "backends/gpu/device_checks.h"
#include "backends/gpu/gpu_backend.h"
#include "backends/gpu/graph_checks.h"
#include "backends/gpu/hip_device.h"
#include "backends/gpu/hiprtc_api.h"
#include "backends/gpu/module_cache.h"
#include "cannl/backends/backend.h"
#include "cannl/runtime/context.h"

namespace cannl::test_gpu {
namespace {

using backends::gpu::HipRuntimeApi;

struct MockRuntime {
  std::shared_ptr<backends::cc::SharedLibrary> library;
  const HipRuntimeApi* api = nullptr;  // never freed: devices use it until they go
  int (*errors)() = nullptr;
  int (*live_objects)() = nullptr;
  int (*launches)() = nullptr;
  std::size_t (*printf_fifo)() = nullptr;
  int (*peer_copies)() = nullptr;
  int (*stream_waits)() = nullptr;
  void (*set_peer_access)(int) = nullptr;
  MockLog log;  // every launch and memset, direct or from a graph (graph_checks.h)
  // The most threads a block of kernel `name` may have (1024 unless set), before loading it.
  void (*set_kernel_max_threads)(const char* name, int threads) = nullptr;
  int (*graph_instantiations)() = nullptr;
  int (*graph_launches)() = nullptr;
  int (*graph_updates)() = nullptr;
};

// Why the mock cannot run here (no hiprtc, no C compiler), or "".
std::string unavailable() {
  try {
    backends::gpu::hiprtc_version();
    (void)backends::cc::load_or_compile("mock_hip_runtime",
                                        files::read_file(CANNL_SOURCE_DIR "/tests/backends/gpu/mock_hip_runtime.c"));
    return "";
  } catch (const BackendUnavailable& e) {
    return e.what();
  }
}

// Runs `test` with the mock in a child process, then checks that the mock saw no misuse and
// that nothing is left alive; the child's failures fail the test.
// `without_graphs`: the mock compiled as a runtime without the graph API.
void on_the_mock(const std::function<void(const MockRuntime&)>& test, bool without_graphs = false) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        MockRuntime mock;
        const std::string source = files::read_file(CANNL_SOURCE_DIR "/tests/backends/gpu/mock_hip_runtime.c");
        mock.library = without_graphs ? backends::cc::load_or_compile("mock_hip_runtime_without_graphs",
                                                                      "#define MOCK_WITHOUT_GRAPHS 1\n" + source)
                                      : backends::cc::load_or_compile("mock_hip_runtime", source);
        mock.api = new HipRuntimeApi(HipRuntimeApi::load({mock.library->path()}));
        mock.errors = reinterpret_cast<int (*)()>(mock.library->symbol("mock_errors"));
        mock.live_objects = reinterpret_cast<int (*)()>(mock.library->symbol("mock_live_objects"));
        mock.launches = reinterpret_cast<int (*)()>(mock.library->symbol("mock_launches"));
        mock.printf_fifo = reinterpret_cast<std::size_t (*)()>(mock.library->symbol("mock_printf_fifo"));
        mock.peer_copies = reinterpret_cast<int (*)()>(mock.library->symbol("mock_peer_copies"));
        mock.stream_waits = reinterpret_cast<int (*)()>(mock.library->symbol("mock_stream_waits"));
        mock.set_peer_access = reinterpret_cast<void (*)(int)>(mock.library->symbol("mock_set_peer_access"));
        mock.log.log = reinterpret_cast<const char* (*)()>(mock.library->symbol("mock_log"));
        mock.log.clear_log = reinterpret_cast<void (*)()>(mock.library->symbol("mock_clear_log"));
        mock.log.declare_kernel = reinterpret_cast<void (*)(const char*, int)>(mock.library->symbol("mock_declare_kernel"));
        mock.set_kernel_max_threads =
            reinterpret_cast<void (*)(const char*, int)>(mock.library->symbol("mock_set_kernel_max_threads"));
        mock.graph_instantiations = reinterpret_cast<int (*)()>(mock.library->symbol("mock_graph_instantiations"));
        mock.graph_launches = reinterpret_cast<int (*)()>(mock.library->symbol("mock_graph_launches"));
        mock.graph_updates = reinterpret_cast<int (*)()>(mock.library->symbol("mock_graph_updates"));
        try {
          test(mock);
        } catch (const std::exception& e) {
          ADD_FAILURE() << "threw: " << e.what();
        }
        EXPECT_EQ(mock.errors(), 0) << "calls a real runtime would reject";
        EXPECT_EQ(mock.live_objects(), 0) << "allocations, modules, events or streams not released";
        // _Exit: no exit-time leak check, which would report what ROCm's compiler keeps for the
        // life of the process (under ASan).
        std::fflush(nullptr);
        std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

#define SKIP_WITHOUT_MOCK()                           \
  do {                                                \
    const std::string why = unavailable();            \
    if (!why.empty()) GTEST_SKIP() << why;            \
  } while (false)

std::shared_ptr<Device> open(const MockRuntime& mock, std::size_t printf_fifo = 0) {
  return backends::gpu::open_hip_on(*mock.api, 0, {.printf_fifo_bytes = printf_fifo});
}

TEST(HipOnAMockRuntime, PassesTheDeviceChecks) {
  SKIP_WITHOUT_MOCK();
  on_the_mock([](const MockRuntime& mock) {
    auto device = open(mock);
    EXPECT_EQ(device->description().rfind("Mock AMD GPU (gfx90a, wave64), HIP runtime 6.2, hiprtc ", 0), 0u)
        << device->description();
    EXPECT_EQ(device->limits().max_threads_per_block, 1024);
    EXPECT_EQ(device->limits().max_grid_dims[1], 2147483647);
    EXPECT_EQ(device->limits().max_shared_bytes, 65536);
    EXPECT_EQ(device->limits().warp_size, 64);
    EXPECT_NE(device->cache_tag().find("--offload-arch=gfx90a"), std::string::npos) << device->cache_tag();
    check_buffers(*device);

    const int launches = mock.launches();
    const fs::path cache = fresh_cache_dir("hip_mock_hit");
    auto first = check_axpy(*device, cuda_axpy_source(), cache);
    EXPECT_FALSE(first->from_cache());
    auto host = backends::make_interpreter_backend()->allocate(64);
    check_launch_errors(*device, *first, *host);
    auto other = open(mock);
    EXPECT_TRUE(check_axpy(*other, cuda_axpy_source(), cache)->from_cache());
    EXPECT_EQ(mock.launches(), launches + 2) << "an empty grid or a rejected launch reaches no runtime";
    EXPECT_THROW(other->launch(*first, 0, ir::KernelGeometry{}, {}), RuntimeUsageError) << "another device's module";
  });
}

// Runs `call` on a thread of its own, which has no current device until the device sets it.
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

TEST(HipOnAMockRuntime, EveryCallSetsTheDeviceOnItsThread) {
  SKIP_WITHOUT_MOCK();
  on_the_mock([](const MockRuntime& mock) {
    std::shared_ptr<Device> device;
    std::unique_ptr<backends::Buffer> a, b, c;
    std::shared_ptr<Module> module;
    std::unique_ptr<backends::gpu::Event> event;
    const std::vector<float> ones(35, 1.0f);
    // hiprtc compiles on this thread, into the cache that the fresh thread's load then reads: a
    // thread that ran LLVM ends with LLVM's alternate signal stack, which ASan fails to unmap.
    const fs::path cache = fresh_cache_dir("hip_mock_threads");
    open(mock)->load(cuda_axpy_source(), {"axpy2d"}, cache);
    on_a_fresh_thread([&] { device = open(mock); });
    on_a_fresh_thread([&] { a = device->allocate(35 * 4); });
    on_a_fresh_thread([&] { b = device->allocate(35 * 4); });
    on_a_fresh_thread([&] { c = device->allocate(35 * 4); });
    on_a_fresh_thread([&] { a->write(bytes_of(ones)); });
    on_a_fresh_thread([&] { device->copy(*b, *a); });
    on_a_fresh_thread([&] { device->fill_zero(*c); });
    on_a_fresh_thread([&] { module = device->load(cuda_axpy_source(), {"axpy2d"}, cache); });
    EXPECT_TRUE(module->from_cache());
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
  });
}

// cannl leaves each thread with the device it found set (here device 1, with cannl's on device
// 0), also after a call that throws.
TEST(HipOnAMockRuntime, EveryCallLeavesTheCallersDeviceSet) {
  SKIP_WITHOUT_MOCK();
  on_the_mock([](const MockRuntime& mock) {
    const HipRuntimeApi& api = *mock.api;
    ASSERT_EQ(api.hipSetDevice(1), 0);
    const auto after = [&](const char* call) {
      int now = -1;
      ASSERT_EQ(api.hipGetDevice(&now), 0);
      EXPECT_EQ(now, 1) << "after " << call;
    };
    each_device_call([&] { return open(mock); }, fresh_cache_dir("hip_mock_callers_device"), after);
    api.hipSetDevice(0);
  });
}

TEST(HipOnAMockRuntime, PrintfFifoSizeIsSetWhenAsked) {
  SKIP_WITHOUT_MOCK();
  on_the_mock([](const MockRuntime& mock) {
    { auto device = open(mock); }
    EXPECT_EQ(mock.printf_fifo(), 0u) << "0 keeps the runtime's size";
    { auto device = open(mock, std::size_t{1} << 20); }
    EXPECT_EQ(mock.printf_fifo(), std::size_t{1} << 20);
  });
}

TEST(HipOnAMockRuntime, OutOfMemoryIsAResourceError) {
  SKIP_WITHOUT_MOCK();
  on_the_mock([](const MockRuntime& mock) {
    auto device = open(mock);
    try {
      device->allocate(std::size_t{1} << 41);
      ADD_FAILURE() << "expected ResourceError";
    } catch (const ResourceError& e) {
      EXPECT_NE(std::string(e.what()).find("hipErrorOutOfMemory"), std::string::npos) << e.what();
    }
  });
}

TEST(HipOnAMockRuntime, AMissingKernelIsACompileErrorAndARefusedCacheEntryIsCompiledAgain) {
  SKIP_WITHOUT_MOCK();
  on_the_mock([](const MockRuntime& mock) {
    auto device = open(mock);
    try {
      device->load(cuda_axpy_source(), {"axpy2d", "absent"}, "");
      ADD_FAILURE() << "expected CompileError";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("no kernel absent"), std::string::npos) << e.what();
    }
    const fs::path cache = fresh_cache_dir("hip_mock_refused");
    // A verified entry holding what no runtime loads (the key as HipDevice::load makes it).
    const auto entry = backends::gpu::module_cache_entry(cache, "axpy2d", "hsaco",
                                                         cuda_axpy_source() + "\n" + device->cache_tag());
    backends::gpu::store_cached_module(entry, "not a code object");
    auto module = check_axpy(*device, cuda_axpy_source(), cache);
    EXPECT_FALSE(module->from_cache());
    EXPECT_TRUE(fs::exists(cache / "quarantine" / entry.file.filename()));
  });
}

// A block within the device's 1024 threads may still be over the kernel's own limit
// (hipFuncGetAttribute: its launch bounds allow only 128): a named error before the launch, not
// the runtime's refusal.
TEST(HipOnAMockRuntime, ABlockOverTheKernelsOwnThreadLimitIsARuntimeUsageErrorNamingIt) {
  SKIP_WITHOUT_MOCK();
  on_the_mock([](const MockRuntime& mock) {
    mock.set_kernel_max_threads("axpy2d", 128);
    check_kernel_thread_limit(*open(mock));
  });
}

// Two HIP devices in one context (the mock has two): a copy between them is a peer copy ordered by
// events on the two streams; GPUs without a peer path copy through the host.
TEST(HipOnAMockRuntime, CopiesBetweenTwoDevicesArePeerCopies) {
  SKIP_WITHOUT_MOCK();
  on_the_mock([](const MockRuntime& mock) {
    for (int peer_access : {1, 0}) {
      mock.set_peer_access(peer_access);
      auto gpus = runtime::Context::on_devices(
          {backends::make_gpu_backend(backends::gpu::open_hip_on(*mock.api, 0), codegen::GpuLanguage::Hip),
           backends::make_gpu_backend(backends::gpu::open_hip_on(*mock.api, 1), codegen::GpuLanguage::Hip)});
      auto d0 = gpus.device(0), d1 = gpus.device(1);
      auto x = ir::make_node("x", ir::DType::F32, {4});
      d0.set_values(x, std::vector<double>{1, 2, 3, 4});
      const int copies = mock.peer_copies(), waits = mock.stream_waits();
      runtime::Context::copy(d0, d1, x);
      EXPECT_EQ(mock.peer_copies(), copies + peer_access) << "peer access " << peer_access;
      EXPECT_EQ(mock.stream_waits(), waits + 2 * peer_access) << "peer access " << peer_access;
      EXPECT_EQ(d1.get_values(x), (std::vector<double>{1, 2, 3, 4}));
    }
  });
}

// A routine's kernels as one HIP graph: built once, replayed, updated where a static its kernel
// reads changes, built again for other buffers, launching what direct launches would
// (graph_checks.h; the CUDA graph tests check each case at length).
TEST(HipOnAMockRuntime, ARoutineRunsAsAGraphLaunchingWhatDirectLaunchesWould) {
  SKIP_WITHOUT_MOCK();
  on_the_mock([](const MockRuntime& mock) {
    GraphRuns runs(open(mock), codegen::GpuLanguage::Hip, mock.log);
    auto& exe = runs.compile();
    const GraphRuns::Buffers b = runs.buffers(), other = runs.buffers();
    const std::string at2 = runs.direct_run(b, 2), at3 = runs.direct_run(b, 3), other_at3 = runs.direct_run(other, 3);
    EXPECT_NE(at2.find("memset scratch0 4\n"), std::string::npos) << at2;
    EXPECT_EQ(runs.run(exe, b, 2), at2);
    EXPECT_EQ(runs.run(exe, b, 2), at2);
    EXPECT_EQ(runs.run(exe, b, 3), at3);
    EXPECT_EQ(mock.graph_instantiations(), 1);
    EXPECT_EQ(mock.graph_launches(), 3);
    EXPECT_EQ(mock.graph_updates(), 1) << "the gathering kernel's static";
    EXPECT_EQ(runs.run(exe, other, 3), other_at3);
    EXPECT_EQ(exe.graph_builds(), 2u);
  });
}

TEST(HipOnAMockRuntime, ARuntimeWithoutGraphsLaunchesOneByOneSayingWhy) {
  SKIP_WITHOUT_MOCK();
  on_the_mock(
      [](const MockRuntime& mock) {
        GraphRuns runs(open(mock), codegen::GpuLanguage::Hip, mock.log);
        auto& exe = runs.compile();
        const GraphRuns::Buffers b = runs.buffers();
        const std::string expected = runs.direct_run(b, 2);
        ::testing::internal::CaptureStderr();
        EXPECT_EQ(runs.run(exe, b, 2), expected);
        const std::string log = ::testing::internal::GetCapturedStderr();
        EXPECT_NE(log.find("no hip graph (the HIP runtime " + mock.library->path() + " lacks hipGraphCreate,"),
                  std::string::npos)
            << log;
        EXPECT_EQ(exe.graph_builds(), 0u);
      },
      true);
}

}  // namespace
}  // namespace cannl::test_gpu
