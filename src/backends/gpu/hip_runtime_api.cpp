// The HIP runtime loaded at run time (see hip_runtime_api.h).
#include "backends/gpu/hip_runtime_api.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "backends/gpu/api_library.h"
#include "cannl/support/error.h"

namespace cannl::backends::gpu {

namespace {

// The graph entry points, which an older runtime may lack.
void bind_graphs(const ApiLibrary& lib, HipRuntimeApi& api) {
  std::string& missing = api.missing_graph_entry_points;
  lib.bind_optional(api.hipGraphCreate, "hipGraphCreate", missing);
  lib.bind_optional(api.hipGraphDestroy, "hipGraphDestroy", missing);
  lib.bind_optional(api.hipGraphAddKernelNode, "hipGraphAddKernelNode", missing);
  lib.bind_optional(api.hipGraphAddMemsetNode, "hipGraphAddMemsetNode", missing);
  lib.bind_optional(api.hipGraphInstantiateWithFlags, "hipGraphInstantiateWithFlags", missing);
  lib.bind_optional(api.hipGraphExecDestroy, "hipGraphExecDestroy", missing);
  lib.bind_optional(api.hipGraphExecKernelNodeSetParams, "hipGraphExecKernelNodeSetParams", missing);
  lib.bind_optional(api.hipGraphLaunch, "hipGraphLaunch", missing);
}

HipRuntimeApi bind_runtime(const ApiLibrary& lib) {
  HipRuntimeApi api;
  lib.bind(api.hipInit, "hipInit");
  lib.bind(api.hipRuntimeGetVersion, "hipRuntimeGetVersion");
  lib.bind(api.hipGetErrorName, "hipGetErrorName");
  lib.bind(api.hipGetErrorString, "hipGetErrorString");
  lib.bind(api.hipGetDeviceCount, "hipGetDeviceCount");
  lib.bind(api.hipGetDevice, "hipGetDevice");
  lib.bind(api.hipSetDevice, "hipSetDevice");
  lib.bind(api.hipDeviceGet, "hipDeviceGet");
  lib.bind(api.hipDeviceGetAttribute, "hipDeviceGetAttribute");
  lib.bind(api.hipDeviceGetName, "hipDeviceGetName");
  lib.bind(api.hipGetDeviceProperties, "hipGetDeviceProperties");
  lib.bind_optional(api.hipDeviceSetLimit, "hipDeviceSetLimit");
  lib.bind(api.hipStreamCreateWithFlags, "hipStreamCreateWithFlags");
  lib.bind(api.hipStreamDestroy, "hipStreamDestroy");
  lib.bind(api.hipStreamSynchronize, "hipStreamSynchronize");
  lib.bind(api.hipMalloc, "hipMalloc");
  lib.bind(api.hipFree, "hipFree");
  lib.bind(api.hipMemsetD8Async, "hipMemsetD8Async");
  lib.bind(api.hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync");
  lib.bind(api.hipMemcpyDtoHAsync, "hipMemcpyDtoHAsync");
  lib.bind(api.hipMemcpyDtoDAsync, "hipMemcpyDtoDAsync");
  lib.bind(api.hipModuleLoadData, "hipModuleLoadData");
  lib.bind(api.hipModuleUnload, "hipModuleUnload");
  lib.bind(api.hipModuleGetFunction, "hipModuleGetFunction");
  lib.bind(api.hipFuncGetAttribute, "hipFuncGetAttribute");
  lib.bind(api.hipModuleLaunchKernel, "hipModuleLaunchKernel");
  lib.bind(api.hipEventCreateWithFlags, "hipEventCreateWithFlags");
  lib.bind(api.hipEventDestroy, "hipEventDestroy");
  lib.bind(api.hipEventRecord, "hipEventRecord");
  lib.bind(api.hipEventSynchronize, "hipEventSynchronize");
  lib.bind(api.hipEventElapsedTime, "hipEventElapsedTime");
  lib.bind(api.hipStreamWaitEvent, "hipStreamWaitEvent");
  lib.bind(api.hipDeviceCanAccessPeer, "hipDeviceCanAccessPeer");
  lib.bind(api.hipDeviceEnablePeerAccess, "hipDeviceEnablePeerAccess");
  lib.bind(api.hipMemcpyPeerAsync, "hipMemcpyPeerAsync");
  bind_graphs(lib, api);
  api.library = lib.path();
  return api;
}

}  // namespace

std::vector<std::string> rocm_candidates(const std::vector<std::string>& sonames) {
  std::vector<std::filesystem::path> roots;
  for (const char* variable : {"ROCM_PATH", "HIP_PATH"})
    if (const char* value = std::getenv(variable); value != nullptr && *value != '\0') roots.emplace_back(value);
  roots.emplace_back("/opt/rocm");
  std::vector<std::string> out;
  auto add = [&](const std::string& candidate) {
    for (const auto& existing : out)
      if (existing == candidate) return;
    out.push_back(candidate);
  };
  for (const auto& soname : sonames) add(soname);
  for (const auto& root : roots)
    for (const auto& soname : sonames) add((root / "lib" / soname).string());
  return out;
}

std::vector<std::string> hip_runtime_candidates() {
  return rocm_candidates({"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"});
}

HipRuntimeApi HipRuntimeApi::load(const std::vector<std::string>& candidates) {
  const ApiLibrary lib(candidates, "the HIP runtime");
  HipRuntimeApi api = bind_runtime(lib);
  // Without a GPU (or without the amdgpu driver's /dev/kfd) hipInit fails: no backend here.
  const hip::hipError_t init = api.hipInit(0);
  if (init != hip::hipSuccess)
    throw BackendUnavailable("the HIP runtime (" + api.library + ") did not initialize: hipInit failed with " +
                             api.describe(init) +
                             (init == hip::hipErrorNoDevice || init == hip::hipErrorInvalidDevice
                                  ? " (no AMD GPU, or no access to /dev/kfd)"
                                  : "; check rocminfo"));
  api.check(api.hipRuntimeGetVersion(&api.runtime_version), "hipRuntimeGetVersion");
  return api;
}

const HipRuntimeApi& HipRuntimeApi::get() {
  // Not a function-local static: a failed load must be retried by the next call. Never freed:
  // devices, buffers and modules use the table until they go (as the CUDA driver's table).
  static std::mutex mutex;
  static const HipRuntimeApi* loaded = nullptr;
  std::lock_guard lock(mutex);
  if (loaded == nullptr) loaded = new HipRuntimeApi(load(hip_runtime_candidates()));
  return *loaded;
}

std::string HipRuntimeApi::describe(hip::hipError_t result) const {
  const char* name = hipGetErrorName != nullptr ? hipGetErrorName(result) : nullptr;
  if (name == nullptr) return "hipError_t " + std::to_string(result);
  std::string out = name;
  const char* text = hipGetErrorString != nullptr ? hipGetErrorString(result) : nullptr;
  if (text != nullptr && out != text) out += std::string(" (") + text + ")";
  return out;
}

void HipRuntimeApi::check(hip::hipError_t result, const char* call, const std::string& context) const {
  if (result == hip::hipSuccess) return;
  const std::string message = std::string(call) + " failed: " + describe(result) +
                              (context.empty() ? "" : "; " + context);
  if (result == hip::hipErrorOutOfMemory) throw ResourceError("the GPU is out of memory: " + message);
  throw RuntimeError("HIP: " + message +
                     (hip::leaves_the_device_unusable(result)
                          ? "\n  (a kernel fault leaves the HIP device unusable: restart the process)"
                          : ""));
}

}  // namespace cannl::backends::gpu
