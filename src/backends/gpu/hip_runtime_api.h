#pragma once
// The HIP runtime (libamdhip64.so), loaded at run time. The declarations below are the few of
// hip_runtime_api.h that cannl uses, with the values and signatures of ROCm 5.2's header (the
// one CI has). ROCm 6 renamed its hipGetDeviceProperties to hipGetDevicePropertiesR0600 for a new
// layout and kept the plain symbol for the ROCm 5 layout read here.
//
//   const HipRuntimeApi& hip = HipRuntimeApi::get();        // BackendUnavailable without ROCm
//   hip.check(hip.hipSetDevice(0), "hipSetDevice");         // RuntimeError / ResourceError

#include <cstddef>
#include <string>
#include <vector>

namespace cannl::backends::gpu {

namespace hip {
using hipError_t = int;
using hipDevice_t = int;
using hipDeviceptr_t = void*;
struct ihipStream_t;
struct ihipModule_t;
struct ihipModuleSymbol_t;
struct ihipEvent_t;
using hipStream_t = ihipStream_t*;
using hipModule_t = ihipModule_t*;
using hipFunction_t = ihipModuleSymbol_t*;
using hipEvent_t = ihipEvent_t*;
struct ihipGraph;
struct hipGraphNode;
struct hipGraphExec;
using hipGraph_t = ihipGraph*;
using hipGraphNode_t = hipGraphNode*;
using hipGraphExec_t = hipGraphExec*;

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
// hipKernelNodeParams: `func` a hipFunction_t of a loaded module.
struct hipKernelNodeParams {
  dim3 blockDim;
  void** extra = nullptr;
  void* func = nullptr;
  dim3 gridDim;
  void** kernelParams = nullptr;
  unsigned sharedMemBytes = 0;
};
// hipMemsetParams: `width` elements of `elementSize` bytes (1, 2 or 4) in each of `height` rows.
struct hipMemsetParams {
  void* dst = nullptr;
  unsigned elementSize = 1;
  std::size_t height = 1;
  std::size_t pitch = 0;  // unused for one row
  unsigned value = 0;
  std::size_t width = 0;
};

constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorOutOfMemory = 2;
constexpr hipError_t hipErrorNoDevice = 100;
constexpr hipError_t hipErrorInvalidDevice = 101;
constexpr hipError_t hipErrorPeerAccessAlreadyEnabled = 704;
// A module load refused for the code object itself.
constexpr hipError_t hipErrorInvalidImage = 200;
constexpr hipError_t hipErrorNoBinaryForGpu = 209;
constexpr hipError_t hipErrorInvalidKernelFile = 218;
// Kernel faults: after them later calls on the device fail alike.
constexpr hipError_t hipErrorIllegalAddress = 700;
constexpr hipError_t hipErrorLaunchFailure = 719;

/// Whether a module load's `result` refuses the code object itself.
inline bool refuses_the_image(hipError_t result) {
  return result == hipErrorInvalidImage || result == hipErrorNoBinaryForGpu || result == hipErrorInvalidKernelFile;
}
/// Whether `result` leaves the device unusable (a kernel fault).
inline bool leaves_the_device_unusable(hipError_t result) {
  return result == hipErrorIllegalAddress || result == hipErrorLaunchFailure;
}

// hipDeviceAttribute_t
constexpr int hipDeviceAttributeMaxBlockDimX = 26;  // Y = 27, Z = 28
constexpr int hipDeviceAttributeMaxGridDimX = 29;   // Y = 30, Z = 31
constexpr int hipDeviceAttributeMaxThreadsPerBlock = 56;
constexpr int hipDeviceAttributeMaxSharedMemoryPerBlock = 74;  // LDS bytes of one block
constexpr int hipDeviceAttributeMultiprocessorCount = 63;       // compute units
constexpr int hipDeviceAttributeWarpSize = 87;                 // the wave: 64 (CDNA, GCN) or 32 (RDNA)

// hipFunction_attribute: the most threads a block of the kernel may have (its launch bounds,
// registers), at most the device's.
constexpr int HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;

// hipLimit_t
constexpr int hipLimitPrintfFifoSize = 1;

constexpr unsigned hipStreamNonBlocking = 0x1;
constexpr unsigned hipEventDisableTiming = 0x2;

/// Where hipGetDeviceProperties (ROCm 5 layout) writes gcnArchName ("gfx90a:sramecc+:xnack-"),
/// and a size comfortably above the whole structure's (792 bytes).
constexpr std::size_t kPropertiesArchOffset = 396;
constexpr std::size_t kPropertiesBytes = 4096;
}  // namespace hip

/// The runtime's entry points, bound once per process.
struct HipRuntimeApi {
  /// Loads libamdhip64 and runs hipInit(0) on first use. Throws BackendUnavailable naming the
  /// library (or hipInit's error: no device, no driver); a later call tries again.
  static const HipRuntimeApi& get();
  /// The runtime from the first of `candidates` that loads, initialized; a new table each call.
  static HipRuntimeApi load(const std::vector<std::string>& candidates);

  /// Throws, for a `result` other than hipSuccess, ResourceError (out of memory) or RuntimeError
  /// naming `call`, the error's name and its description, then `context` when given.
  void check(hip::hipError_t result, const char* call, const std::string& context = "") const;
  /// "hipErrorOutOfMemory (out of memory)"
  std::string describe(hip::hipError_t result) const;

  using hipError_t = hip::hipError_t;
  using hipDeviceptr_t = hip::hipDeviceptr_t;
  using hipStream_t = hip::hipStream_t;
  hipError_t (*hipInit)(unsigned flags) = nullptr;
  hipError_t (*hipRuntimeGetVersion)(int* version) = nullptr;
  const char* (*hipGetErrorName)(hipError_t error) = nullptr;
  const char* (*hipGetErrorString)(hipError_t error) = nullptr;
  hipError_t (*hipGetDeviceCount)(int* count) = nullptr;
  hipError_t (*hipGetDevice)(int* ordinal) = nullptr;
  hipError_t (*hipSetDevice)(int ordinal) = nullptr;
  hipError_t (*hipDeviceGet)(hip::hipDevice_t* device, int ordinal) = nullptr;
  hipError_t (*hipDeviceGetAttribute)(int* value, int attribute, int ordinal) = nullptr;
  hipError_t (*hipDeviceGetName)(char* name, int length, hip::hipDevice_t device) = nullptr;
  hipError_t (*hipGetDeviceProperties)(void* properties, int ordinal) = nullptr;
  hipError_t (*hipDeviceSetLimit)(int limit, std::size_t value) = nullptr;  // optional: ROCm 5.3 on
  hipError_t (*hipStreamCreateWithFlags)(hipStream_t* stream, unsigned flags) = nullptr;
  hipError_t (*hipStreamDestroy)(hipStream_t stream) = nullptr;
  hipError_t (*hipStreamSynchronize)(hipStream_t stream) = nullptr;
  hipError_t (*hipMalloc)(void** pointer, std::size_t bytes) = nullptr;
  hipError_t (*hipFree)(void* pointer) = nullptr;
  hipError_t (*hipMemsetD8Async)(hipDeviceptr_t pointer, unsigned char value, std::size_t count,
                                 hipStream_t stream) = nullptr;
  hipError_t (*hipMemcpyHtoDAsync)(hipDeviceptr_t dst, void* src, std::size_t bytes, hipStream_t stream) = nullptr;
  hipError_t (*hipMemcpyDtoHAsync)(void* dst, hipDeviceptr_t src, std::size_t bytes, hipStream_t stream) = nullptr;
  hipError_t (*hipMemcpyDtoDAsync)(hipDeviceptr_t dst, hipDeviceptr_t src, std::size_t bytes,
                                   hipStream_t stream) = nullptr;
  hipError_t (*hipModuleLoadData)(hip::hipModule_t* module, const void* image) = nullptr;
  hipError_t (*hipModuleUnload)(hip::hipModule_t module) = nullptr;
  hipError_t (*hipModuleGetFunction)(hip::hipFunction_t* function, hip::hipModule_t module, const char* name) = nullptr;
  hipError_t (*hipFuncGetAttribute)(int* value, int attribute, hip::hipFunction_t function) = nullptr;
  hipError_t (*hipModuleLaunchKernel)(hip::hipFunction_t function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                      unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                                      hipStream_t stream, void** params, void** extra) = nullptr;
  hipError_t (*hipEventCreateWithFlags)(hip::hipEvent_t* event, unsigned flags) = nullptr;
  hipError_t (*hipEventDestroy)(hip::hipEvent_t event) = nullptr;
  hipError_t (*hipEventRecord)(hip::hipEvent_t event, hipStream_t stream) = nullptr;
  hipError_t (*hipEventSynchronize)(hip::hipEvent_t event) = nullptr;
  hipError_t (*hipEventElapsedTime)(float* milliseconds, hip::hipEvent_t start, hip::hipEvent_t end) = nullptr;
  // Several devices: peer copies ordered by events between the devices' streams.
  hipError_t (*hipStreamWaitEvent)(hipStream_t stream, hip::hipEvent_t event, unsigned flags) = nullptr;
  hipError_t (*hipDeviceCanAccessPeer)(int* can_access, int device, int peer) = nullptr;
  hipError_t (*hipDeviceEnablePeerAccess)(int peer, unsigned flags) = nullptr;  // for the current device
  hipError_t (*hipMemcpyPeerAsync)(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes,
                                   hipStream_t stream) = nullptr;
  // Graphs (optional: nullptr where the runtime lacks them; the routines then launch directly).
  hipError_t (*hipGraphCreate)(hip::hipGraph_t* graph, unsigned flags) = nullptr;
  hipError_t (*hipGraphDestroy)(hip::hipGraph_t graph) = nullptr;
  hipError_t (*hipGraphAddKernelNode)(hip::hipGraphNode_t* node, hip::hipGraph_t graph,
                                      const hip::hipGraphNode_t* dependencies, std::size_t dependency_count,
                                      const hip::hipKernelNodeParams* params) = nullptr;
  hipError_t (*hipGraphAddMemsetNode)(hip::hipGraphNode_t* node, hip::hipGraph_t graph,
                                      const hip::hipGraphNode_t* dependencies, std::size_t dependency_count,
                                      const hip::hipMemsetParams* params) = nullptr;
  hipError_t (*hipGraphInstantiateWithFlags)(hip::hipGraphExec_t* exec, hip::hipGraph_t graph,
                                             unsigned long long flags) = nullptr;
  hipError_t (*hipGraphExecDestroy)(hip::hipGraphExec_t exec) = nullptr;
  hipError_t (*hipGraphExecKernelNodeSetParams)(hip::hipGraphExec_t exec, hip::hipGraphNode_t node,
                                                const hip::hipKernelNodeParams* params) = nullptr;
  hipError_t (*hipGraphLaunch)(hip::hipGraphExec_t exec, hipStream_t stream) = nullptr;
  /// "" when every graph entry point bound, else the names of those the runtime lacks.
  std::string missing_graph_entry_points;

  /// The library that loaded ("libamdhip64.so.5").
  std::string library;
  /// hipRuntimeGetVersion: 50221153 for ROCm 5.2 (major * 10^7 + minor * 10^5 + patch).
  int runtime_version = 0;
};

/// The sonames tried for the runtime (libamdhip64.so.6, .so.5, .so), each as the loader finds it
/// and then under $ROCM_PATH, $HIP_PATH and /opt/rocm (see rocm_candidates).
std::vector<std::string> hip_runtime_candidates();

/// Where to look for a ROCm library: each soname as the loader finds it, then in the lib/ folder
/// of $ROCM_PATH, $HIP_PATH and /opt/rocm (ROCm often installs outside the loader's path).
///   rocm_candidates({"libamdhip64.so.6"}) == {"libamdhip64.so.6", "/opt/rocm/lib/libamdhip64.so.6"}
std::vector<std::string> rocm_candidates(const std::vector<std::string>& sonames);

}  // namespace cannl::backends::gpu
