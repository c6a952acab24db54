#pragma once
// The mock GPU libraries of the backends' tests, compiled once per process by the system C
// compiler: the CUDA driver (mock_cuda_driver.c, two devices over host memory) and NCCL
// (mock_nccl.c, reducing that host memory). Each is nullptr with the reason in `why` when it
// cannot be built (no C compiler, or no NVRTC, which the CUDA device needs for its kernels).
//
//   std::string why;
//   const MockDriver* driver = mock_cuda_driver(why);   if (!driver) GTEST_SKIP() << why;

#include <memory>
#include <string>

#include "backends/cc/compile_cache.h"
#include "backends/gpu/cuda_driver_api.h"
#include "backends/gpu/nvrtc_api.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"

namespace cannl::test_gpu {

struct MockDriver {
  std::shared_ptr<backends::cc::SharedLibrary> library;
  const backends::gpu::CudaDriverApi* api = nullptr;  // never freed: devices use it until they go
  int (*errors)() = nullptr;
  int (*live_objects)() = nullptr;
  int (*launches)() = nullptr;
  int (*peer_copies)() = nullptr;
  int (*stream_waits)() = nullptr;
  int (*pinned_allocations)() = nullptr;
  int (*context_switches)() = nullptr;  // cuCtxSetCurrent calls that changed the thread's context
  void (*set_peer_access)(int) = nullptr;
  void (*set_stuck)(int) = nullptr;
  void (*fail_event_record)(int nth) = nullptr;  // the nth cuEventRecord from now fails (0: none)
  // Every launch and memset, direct or from a graph, one line each: "<kernel> grid X Y Z block X
  // Y Z args <hex>..." or "memset <hex address> <bytes>".
  const char* (*log)() = nullptr;
  void (*clear_log)() = nullptr;
  void (*declare_kernel)(const char* name, int arity) = nullptr;  // before launching it
  // The most threads a block of kernel `name` may have (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
  // 1024 unless set), before loading it.
  void (*set_kernel_max_threads)(const char* name, int threads) = nullptr;
  int (*graph_instantiations)() = nullptr;
  int (*graph_launches)() = nullptr;
  int (*graph_updates)() = nullptr;
  void (*fail_graph_instantiate)(int) = nullptr;
  void (*fail_graph_updates)(int) = nullptr;
};

/// The mock driver, or (without_graphs) the same compiled as a driver without the graph API.
inline const MockDriver* mock_cuda_driver(std::string& why, bool without_graphs = false) {
  static const MockDriver* mocks[2] = {nullptr, nullptr};
  static std::string failures[2];
  const MockDriver*& mock = mocks[without_graphs];
  std::string& failure = failures[without_graphs];
  if (mock == nullptr && failure.empty()) {
    try {
      backends::gpu::nvrtc_version();
      const std::string source = files::read_file(CANNL_SOURCE_DIR "/tests/backends/gpu/mock_cuda_driver.c");
      auto* built = new MockDriver;
      built->library = without_graphs
                           ? backends::cc::load_or_compile("mock_cuda_driver_without_graphs",
                                                           "#define MOCK_WITHOUT_GRAPHS 1\n" + source)
                           : backends::cc::load_or_compile("mock_cuda_driver", source);
      built->api = new backends::gpu::CudaDriverApi(backends::gpu::CudaDriverApi::load({built->library->path()}));
      const auto& lib = *built->library;
      built->errors = reinterpret_cast<int (*)()>(lib.symbol("mock_errors"));
      built->live_objects = reinterpret_cast<int (*)()>(lib.symbol("mock_live_objects"));
      built->launches = reinterpret_cast<int (*)()>(lib.symbol("mock_launches"));
      built->peer_copies = reinterpret_cast<int (*)()>(lib.symbol("mock_peer_copies"));
      built->stream_waits = reinterpret_cast<int (*)()>(lib.symbol("mock_stream_waits"));
      built->pinned_allocations = reinterpret_cast<int (*)()>(lib.symbol("mock_pinned_allocations"));
      built->context_switches = reinterpret_cast<int (*)()>(lib.symbol("mock_context_switches"));
      built->set_peer_access = reinterpret_cast<void (*)(int)>(lib.symbol("mock_set_peer_access"));
      built->set_stuck = reinterpret_cast<void (*)(int)>(lib.symbol("mock_set_stuck"));
      built->fail_event_record = reinterpret_cast<void (*)(int)>(lib.symbol("mock_fail_event_record"));
      built->log = reinterpret_cast<const char* (*)()>(lib.symbol("mock_log"));
      built->clear_log = reinterpret_cast<void (*)()>(lib.symbol("mock_clear_log"));
      built->declare_kernel = reinterpret_cast<void (*)(const char*, int)>(lib.symbol("mock_declare_kernel"));
      built->set_kernel_max_threads =
          reinterpret_cast<void (*)(const char*, int)>(lib.symbol("mock_set_kernel_max_threads"));
      built->graph_instantiations = reinterpret_cast<int (*)()>(lib.symbol("mock_graph_instantiations"));
      built->graph_launches = reinterpret_cast<int (*)()>(lib.symbol("mock_graph_launches"));
      built->graph_updates = reinterpret_cast<int (*)()>(lib.symbol("mock_graph_updates"));
      built->fail_graph_instantiate = reinterpret_cast<void (*)(int)>(lib.symbol("mock_fail_graph_instantiate"));
      built->fail_graph_updates = reinterpret_cast<void (*)(int)>(lib.symbol("mock_fail_graph_updates"));
      mock = built;
    } catch (const BackendUnavailable& e) {
      failure = e.what();
    }
  }
  why = failure;
  return mock;
}

struct MockNccl {
  std::shared_ptr<backends::cc::SharedLibrary> library;
  const char* (*log)() = nullptr;
  void (*clear_log)() = nullptr;
  int (*errors)() = nullptr;
  int (*live_comms)() = nullptr;
  void (*fail_next)(int) = nullptr;
  void (*set_async_error)(int) = nullptr;
  void (*set_version)(int) = nullptr;
};

inline const MockNccl* mock_nccl(std::string& why) {
  static const MockNccl* mock = nullptr;
  static std::string failure;
  if (mock == nullptr && failure.empty()) {
    try {
      const std::string source = files::read_file(CANNL_SOURCE_DIR "/tests/backends/gpu/mock_nccl.c");
      auto* built = new MockNccl;
      built->library = backends::cc::load_or_compile("mock_nccl", source);
      const auto& lib = *built->library;
      built->log = reinterpret_cast<const char* (*)()>(lib.symbol("mock_nccl_log"));
      built->clear_log = reinterpret_cast<void (*)()>(lib.symbol("mock_nccl_clear_log"));
      built->errors = reinterpret_cast<int (*)()>(lib.symbol("mock_nccl_errors"));
      built->live_comms = reinterpret_cast<int (*)()>(lib.symbol("mock_nccl_live_comms"));
      built->fail_next = reinterpret_cast<void (*)(int)>(lib.symbol("mock_nccl_fail_next"));
      built->set_async_error = reinterpret_cast<void (*)(int)>(lib.symbol("mock_nccl_set_async_error"));
      built->set_version = reinterpret_cast<void (*)(int)>(lib.symbol("mock_nccl_set_version"));
      mock = built;
    } catch (const BackendUnavailable& e) {
      failure = e.what();
    }
  }
  why = failure;
  return mock;
}

}  // namespace cannl::test_gpu
