// The CUDA driver API loaded at run time (see cuda_driver_api.h).
#include "backends/gpu/cuda_driver_api.h"

#include <memory>
#include <mutex>
#include <utility>

#include "backends/gpu/api_library.h"
#include "cannl/support/error.h"

namespace cannl::backends::gpu {

namespace {

// The graph entry points, which an older driver may lack (the _v2 kernel-node forms are CUDA 12's).
void bind_graphs(const ApiLibrary& lib, CudaDriverApi& api) {
  std::string& missing = api.missing_graph_entry_points;
  lib.bind_optional(api.cuGraphCreate, "cuGraphCreate", missing);
  lib.bind_optional(api.cuGraphDestroy, "cuGraphDestroy", missing);
  lib.bind_optional(api.cuGraphAddKernelNode, "cuGraphAddKernelNode_v2", missing);
  lib.bind_optional(api.cuGraphAddMemsetNode, "cuGraphAddMemsetNode", missing);
  lib.bind_optional(api.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", missing);
  lib.bind_optional(api.cuGraphExecDestroy, "cuGraphExecDestroy", missing);
  lib.bind_optional(api.cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2", missing);
  lib.bind_optional(api.cuGraphLaunch, "cuGraphLaunch", missing);
}

CudaDriverApi bind_driver(const ApiLibrary& lib) {
  CudaDriverApi api;
  lib.bind(api.cuInit, "cuInit");
  lib.bind(api.cuDriverGetVersion, "cuDriverGetVersion");
  lib.bind(api.cuGetErrorName, "cuGetErrorName");
  lib.bind(api.cuGetErrorString, "cuGetErrorString");
  lib.bind(api.cuDeviceGetCount, "cuDeviceGetCount");
  lib.bind(api.cuDeviceGet, "cuDeviceGet");
  lib.bind(api.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  lib.bind(api.cuDeviceGetName, "cuDeviceGetName");
  lib.bind(api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  lib.bind(api.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  lib.bind(api.cuCtxGetCurrent, "cuCtxGetCurrent");
  lib.bind(api.cuCtxSetCurrent, "cuCtxSetCurrent");
  lib.bind(api.cuStreamCreate, "cuStreamCreate");
  lib.bind(api.cuStreamDestroy, "cuStreamDestroy_v2");
  lib.bind(api.cuStreamSynchronize, "cuStreamSynchronize");
  lib.bind(api.cuMemAlloc, "cuMemAlloc_v2");
  lib.bind(api.cuMemFree, "cuMemFree_v2");
  lib.bind(api.cuMemsetD8Async, "cuMemsetD8Async");
  lib.bind(api.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  lib.bind(api.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  lib.bind(api.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  lib.bind(api.cuModuleLoadDataEx, "cuModuleLoadDataEx");
  lib.bind(api.cuModuleUnload, "cuModuleUnload");
  lib.bind(api.cuModuleGetFunction, "cuModuleGetFunction");
  lib.bind(api.cuFuncGetAttribute, "cuFuncGetAttribute");
  lib.bind_optional(api.cuFuncGetParamInfo, "cuFuncGetParamInfo");
  lib.bind(api.cuLaunchKernel, "cuLaunchKernel");
  lib.bind(api.cuEventCreate, "cuEventCreate");
  lib.bind(api.cuEventDestroy, "cuEventDestroy_v2");
  lib.bind(api.cuEventRecord, "cuEventRecord");
  lib.bind(api.cuEventSynchronize, "cuEventSynchronize");
  lib.bind(api.cuEventQuery, "cuEventQuery");
  lib.bind(api.cuEventElapsedTime, "cuEventElapsedTime");
  lib.bind(api.cuStreamWaitEvent, "cuStreamWaitEvent");
  lib.bind(api.cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer");
  lib.bind(api.cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess");
  lib.bind(api.cuMemcpyPeerAsync, "cuMemcpyPeerAsync");
  lib.bind(api.cuMemHostAlloc, "cuMemHostAlloc");
  lib.bind(api.cuMemFreeHost, "cuMemFreeHost");
  bind_graphs(lib, api);
  api.library = lib.path();
  return api;
}

// Names of the results a driver may give before cuGetErrorName works (or from the toolkit's
// stub library, whose cuGetErrorName fails too).
constexpr cuda::CUresult kStubLibrary = 34;
constexpr std::pair<cuda::CUresult, const char*> kEarlyErrors[] = {
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {kStubLibrary, "CUDA_ERROR_STUB_LIBRARY (the CUDA toolkit's stub libcuda.so was loaded, not a driver)"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER (the installed driver is too old)"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {999, "CUDA_ERROR_UNKNOWN"},
};

}  // namespace

CudaDriverApi CudaDriverApi::load(const std::vector<std::string>& candidates) {
  const ApiLibrary lib(candidates, "the CUDA driver");
  CudaDriverApi api = bind_driver(lib);
  const cuda::CUresult init = api.cuInit(0);
  if (init != cuda::CUDA_SUCCESS)
    throw BackendUnavailable("the CUDA driver (" + api.library + ") did not initialize: cuInit failed with " +
                             api.describe(init) +
                             (init == cuda::CUDA_ERROR_NO_DEVICE || init == kStubLibrary ? "" : "; check nvidia-smi"));
  api.check(api.cuDriverGetVersion(&api.driver_version), "cuDriverGetVersion");
  return api;
}

const std::vector<std::string>& cuda_driver_candidates() {
  static const std::vector<std::string> names{"libcuda.so.1", "libcuda.so"};
  return names;
}

const CudaDriverApi& CudaDriverApi::get() {
  // Not a function-local static: a failed load must be retried by the next call. Never freed:
  // devices, buffers and modules use the table until they go, and one held by a static may go
  // after every static of this file.
  static std::mutex mutex;
  static const CudaDriverApi* loaded = nullptr;
  std::lock_guard lock(mutex);
  if (loaded == nullptr) loaded = new CudaDriverApi(load(cuda_driver_candidates()));
  return *loaded;
}

std::string CudaDriverApi::describe(cuda::CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(result, &name) != cuda::CUDA_SUCCESS || name == nullptr) {
    for (const auto& [code, known] : kEarlyErrors)
      if (code == result) return known;
    return "CUresult " + std::to_string(result);
  }
  std::string out = name;
  if (cuGetErrorString(result, &text) == cuda::CUDA_SUCCESS && text != nullptr)
    out += std::string(" (") + text + ")";
  return out;
}

void CudaDriverApi::check(cuda::CUresult result, const char* call, const std::string& context) const {
  if (result == cuda::CUDA_SUCCESS) return;
  const std::string message = std::string(call) + " failed: " + describe(result) +
                              (context.empty() ? "" : "; " + context);
  if (result == cuda::CUDA_ERROR_OUT_OF_MEMORY)
    throw ResourceError("the GPU is out of memory: " + message);
  throw RuntimeError("CUDA: " + message +
                     (cuda::leaves_the_context_unusable(result)
                          ? "\n  (a kernel fault leaves the CUDA context unusable: restart the process)"
                          : ""));
}

}  // namespace cannl::backends::gpu
