#pragma once
// The CUDA driver API (libcuda.so.1), loaded at run time. The declarations below are the few of
// cuda.h that cannl uses, with the values and signatures of cuda.h (CUDA 12 and 13); the entry
// points are the versioned symbols the driver exports (cuMemAlloc_v2, ...), which cuda.h's macros
// select for the plain names.
//
//   const CudaDriverApi& cu = CudaDriverApi::get();          // BackendUnavailable without a driver
//   cu.check(cu.cuDeviceGet(&device, 0), "cuDeviceGet");    // RuntimeError / ResourceError

#include <cstddef>
#include <string>
#include <vector>

namespace cannl::backends::gpu {

namespace cuda {
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // CUdeviceptr_v2 on 64-bit hosts
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
struct CUgraph_st;
struct CUgraphNode_st;
struct CUgraphExec_st;
struct CUkern_st;
using CUgraph = CUgraph_st*;
using CUgraphNode = CUgraphNode_st*;
using CUgraphExec = CUgraphExec_st*;
using CUkernel = CUkern_st*;

// CUDA_KERNEL_NODE_PARAMS (the _v2 layout, CUDA 12 and later): `func` set, `kern` and `ctx` unused.
struct CUDA_KERNEL_NODE_PARAMS {
  CUfunction func = nullptr;
  unsigned gridDimX = 1, gridDimY = 1, gridDimZ = 1;
  unsigned blockDimX = 1, blockDimY = 1, blockDimZ = 1;
  unsigned sharedMemBytes = 0;
  void** kernelParams = nullptr;
  void** extra = nullptr;
  CUkernel kern = nullptr;
  CUcontext ctx = nullptr;
};
// CUDA_MEMSET_NODE_PARAMS: `width` elements of `elementSize` bytes (1, 2 or 4) in each of `height` rows.
struct CUDA_MEMSET_NODE_PARAMS {
  CUdeviceptr dst = 0;
  std::size_t pitch = 0;  // unused for one row
  unsigned value = 0;
  unsigned elementSize = 1;
  std::size_t width = 0;
  std::size_t height = 1;
};

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr CUresult CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;
// cuCtxEnablePeerAccess with a peer path the driver cannot map: copies go through the host.
constexpr CUresult CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217;
constexpr CUresult CUDA_ERROR_TOO_MANY_PEERS = 711;
// A module load refused for the image itself (an invalid image, no binary for this GPU, invalid
// PTX, no or a disabled PTX JIT, a PTX version the driver does not know, a device-side sync).
constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
constexpr CUresult CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221;
constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
constexpr CUresult CUDA_ERROR_JIT_COMPILATION_DISABLED = 223;
constexpr CUresult CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC = 225;
// Kernel faults: after them every call in the context fails alike.
constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700;
constexpr CUresult CUDA_ERROR_HARDWARE_STACK_ERROR = 714;  // ... 718: illegal or misaligned
constexpr CUresult CUDA_ERROR_LAUNCH_FAILED = 719;         // instruction, invalid address space, PC

/// Whether a module load's `result` refuses the image itself (so that another image may load).
inline bool refuses_the_image(CUresult result) {
  switch (result) {
    case CUDA_ERROR_INVALID_IMAGE: case CUDA_ERROR_NO_BINARY_FOR_GPU: case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND: case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILATION_DISABLED: case CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC: return true;
    default: return false;
  }
}
/// Whether `result` leaves the context unusable (a kernel fault).
inline bool leaves_the_context_unusable(CUresult result) {
  return result == CUDA_ERROR_ILLEGAL_ADDRESS ||
         (result >= CUDA_ERROR_HARDWARE_STACK_ERROR && result <= CUDA_ERROR_LAUNCH_FAILED);
}

// CUdevice_attribute
constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2;  // Y = 3, Z = 4
constexpr int CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;   // Y = 6, Z = 7
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
constexpr int CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

// CUfunction_attribute: the most threads a block of the kernel may have (its registers, launch
// bounds), at most the device's.
constexpr int CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
// cuFuncGetParamInfo's answer past a kernel's last parameter.
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;

// CUjit_option
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 0x1;  // page-locked for every context
constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
}  // namespace cuda

/// The driver's entry points, bound once per process.
struct CudaDriverApi {
  /// Loads libcuda.so.1 and runs cuInit(0) on first use. Throws BackendUnavailable naming the
  /// library (or cuInit's error: no device, a driver that does not match its kernel module);
  /// a later call tries again.
  static const CudaDriverApi& get();
  /// The driver from the first of `candidates` that loads, initialized; a new table each call
  /// (tests load the toolkit's stub library, which binds but does not initialize).
  static CudaDriverApi load(const std::vector<std::string>& candidates);

  /// Throws, for a `result` other than CUDA_SUCCESS, ResourceError (out of memory) or
  /// RuntimeError naming `call`, the error's name and its description, then `context` when given.
  ///   check(cuMemAlloc_v2(&p, n), "cuMemAlloc_v2", "allocating 1024 bytes")
  void check(cuda::CUresult result, const char* call, const std::string& context = "") const;
  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
  std::string describe(cuda::CUresult result) const;

  using CUresult = cuda::CUresult;
  using CUdevice = cuda::CUdevice;
  using CUdeviceptr = cuda::CUdeviceptr;
  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** name) = nullptr;
  CUresult (*cuGetErrorString)(CUresult error, const char** text) = nullptr;
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device) = nullptr;
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(cuda::CUcontext* context, CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device) = nullptr;  // _v2
  CUresult (*cuCtxGetCurrent)(cuda::CUcontext* context) = nullptr;
  CUresult (*cuCtxSetCurrent)(cuda::CUcontext context) = nullptr;
  CUresult (*cuStreamCreate)(cuda::CUstream* stream, unsigned flags) = nullptr;
  CUresult (*cuStreamDestroy)(cuda::CUstream stream) = nullptr;  // _v2
  CUresult (*cuStreamSynchronize)(cuda::CUstream stream) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr* pointer, std::size_t bytes) = nullptr;  // _v2
  CUresult (*cuMemFree)(CUdeviceptr pointer) = nullptr;                        // _v2
  CUresult (*cuMemsetD8Async)(CUdeviceptr pointer, unsigned char value, std::size_t count,
                              cuda::CUstream stream) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, std::size_t bytes,
                                cuda::CUstream stream) = nullptr;  // _v2
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, std::size_t bytes,
                                cuda::CUstream stream) = nullptr;  // _v2
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes,
                                cuda::CUstream stream) = nullptr;  // _v2
  CUresult (*cuModuleLoadDataEx)(cuda::CUmodule* module, const void* image, unsigned options_count,
                                 int* options, void** option_values) = nullptr;
  CUresult (*cuModuleUnload)(cuda::CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(cuda::CUfunction* function, cuda::CUmodule module,
                                  const char* name) = nullptr;
  CUresult (*cuFuncGetAttribute)(int* value, int attribute, cuda::CUfunction function) = nullptr;
  // Optional (CUDA 12.4 and later; nullptr before): a kernel's parameters, to check a launch's
  // argument count against.
  CUresult (*cuFuncGetParamInfo)(cuda::CUfunction function, std::size_t index, std::size_t* offset,
                                 std::size_t* size) = nullptr;
  CUresult (*cuLaunchKernel)(cuda::CUfunction function, unsigned grid_x, unsigned grid_y,
                             unsigned grid_z, unsigned block_x, unsigned block_y, unsigned block_z,
                             unsigned shared_bytes, cuda::CUstream stream, void** params,
                             void** extra) = nullptr;
  CUresult (*cuEventCreate)(cuda::CUevent* event, unsigned flags) = nullptr;
  CUresult (*cuEventDestroy)(cuda::CUevent event) = nullptr;  // _v2
  CUresult (*cuEventRecord)(cuda::CUevent event, cuda::CUstream stream) = nullptr;
  CUresult (*cuEventSynchronize)(cuda::CUevent event) = nullptr;
  CUresult (*cuEventQuery)(cuda::CUevent event) = nullptr;  // CUDA_ERROR_NOT_READY while pending
  CUresult (*cuEventElapsedTime)(float* milliseconds, cuda::CUevent start, cuda::CUevent end) = nullptr;
  // Several devices: peer copies ordered by events between the devices' streams.
  CUresult (*cuStreamWaitEvent)(cuda::CUstream stream, cuda::CUevent event, unsigned flags) = nullptr;
  CUresult (*cuDeviceCanAccessPeer)(int* can_access, CUdevice device, CUdevice peer) = nullptr;
  CUresult (*cuCtxEnablePeerAccess)(cuda::CUcontext peer, unsigned flags) = nullptr;
  CUresult (*cuMemHostAlloc)(void** pointer, std::size_t bytes, unsigned flags) = nullptr;
  CUresult (*cuMemFreeHost)(void* pointer) = nullptr;
  CUresult (*cuMemcpyPeerAsync)(CUdeviceptr dst, cuda::CUcontext dst_context, CUdeviceptr src,
                                cuda::CUcontext src_context, std::size_t bytes, cuda::CUstream stream) = nullptr;

  // Graphs (optional: nullptr where the driver lacks them; the routines then launch directly).
  CUresult (*cuGraphCreate)(cuda::CUgraph* graph, unsigned flags) = nullptr;
  CUresult (*cuGraphDestroy)(cuda::CUgraph graph) = nullptr;
  CUresult (*cuGraphAddKernelNode)(cuda::CUgraphNode* node, cuda::CUgraph graph, const cuda::CUgraphNode* dependencies,
                                   std::size_t dependency_count,
                                   const cuda::CUDA_KERNEL_NODE_PARAMS* params) = nullptr;  // _v2
  CUresult (*cuGraphAddMemsetNode)(cuda::CUgraphNode* node, cuda::CUgraph graph, const cuda::CUgraphNode* dependencies,
                                   std::size_t dependency_count, const cuda::CUDA_MEMSET_NODE_PARAMS* params,
                                   cuda::CUcontext context) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(cuda::CUgraphExec* exec, cuda::CUgraph graph,
                                          unsigned long long flags) = nullptr;
  CUresult (*cuGraphExecDestroy)(cuda::CUgraphExec exec) = nullptr;
  CUresult (*cuGraphExecKernelNodeSetParams)(cuda::CUgraphExec exec, cuda::CUgraphNode node,
                                             const cuda::CUDA_KERNEL_NODE_PARAMS* params) = nullptr;  // _v2
  CUresult (*cuGraphLaunch)(cuda::CUgraphExec exec, cuda::CUstream stream) = nullptr;
  /// "" when every graph entry point bound, else the names of those the driver lacks.
  std::string missing_graph_entry_points;

  /// The library that loaded ("libcuda.so.1").
  std::string library;
  /// cuDriverGetVersion: 13000 for CUDA 13.0.
  int driver_version = 0;
};

/// The sonames tried for the driver: libcuda.so.1 (the driver installs no unversioned name
/// outside its development package), then libcuda.so.
const std::vector<std::string>& cuda_driver_candidates();

}  // namespace cannl::backends::gpu
