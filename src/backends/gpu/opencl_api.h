#pragma once
// OpenCL (libOpenCL.so.1, the ICD loader), loaded at run time. The declarations below are the few
// of CL/cl.h that cannl uses (the OpenCL 1.2 API, which PoCL and NVIDIA's driver both provide),
// with cl.h's values and signatures.
//
//   const OpenClApi& cl = OpenClApi::get();                 // BackendUnavailable without a loader
//   cl.check(cl.clFinish(queue), "clFinish");                // RuntimeError / ResourceError

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cannl::backends::gpu {

namespace opencl {
using cl_int = std::int32_t;
using cl_uint = std::uint32_t;
using cl_ulong = std::uint64_t;
using cl_bool = cl_uint;
using cl_bitfield = cl_ulong;
using cl_device_type = cl_bitfield;
using cl_mem_flags = cl_bitfield;
using cl_command_queue_properties = cl_bitfield;
using cl_context_properties = std::intptr_t;
using cl_info = cl_uint;  // cl_platform_info, cl_device_info, cl_program_info, ...
struct _cl_platform_id;
struct _cl_device_id;
struct _cl_context;
struct _cl_command_queue;
struct _cl_mem;
struct _cl_program;
struct _cl_kernel;
struct _cl_event;
using cl_platform_id = _cl_platform_id*;
using cl_device_id = _cl_device_id*;
using cl_context = _cl_context*;
using cl_command_queue = _cl_command_queue*;
using cl_mem = _cl_mem*;
using cl_program = _cl_program*;
using cl_kernel = _cl_kernel*;
using cl_event = _cl_event*;

constexpr cl_int CL_SUCCESS = 0;
constexpr cl_int CL_DEVICE_NOT_FOUND = -1;
constexpr cl_int CL_MEM_OBJECT_ALLOCATION_FAILURE = -4;
constexpr cl_int CL_OUT_OF_RESOURCES = -5;
constexpr cl_int CL_OUT_OF_HOST_MEMORY = -6;
constexpr cl_int CL_BUILD_PROGRAM_FAILURE = -11;
constexpr cl_int CL_PLATFORM_NOT_FOUND_KHR = -1001;
constexpr cl_bool CL_TRUE = 1;
constexpr cl_device_type CL_DEVICE_TYPE_ALL = 0xFFFFFFFF;
constexpr cl_info CL_PLATFORM_VERSION = 0x0901;
constexpr cl_info CL_PLATFORM_NAME = 0x0902;
constexpr cl_info CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS = 0x1003;
constexpr cl_info CL_DEVICE_MAX_WORK_GROUP_SIZE = 0x1004;
constexpr cl_info CL_DEVICE_MAX_WORK_ITEM_SIZES = 0x1005;
constexpr cl_info CL_DEVICE_MAX_MEM_ALLOC_SIZE = 0x1010;
constexpr cl_info CL_DEVICE_SINGLE_FP_CONFIG = 0x101B;
constexpr cl_info CL_DEVICE_LOCAL_MEM_SIZE = 0x1023;
constexpr cl_info CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002;
constexpr cl_info CL_DEVICE_NAME = 0x102B;
constexpr cl_info CL_DRIVER_VERSION = 0x102D;
constexpr cl_info CL_DEVICE_VERSION = 0x102F;
constexpr cl_info CL_DEVICE_EXTENSIONS = 0x1030;
constexpr cl_info CL_PROGRAM_BINARY_SIZES = 0x1165;
constexpr cl_info CL_PROGRAM_BINARIES = 0x1166;
constexpr cl_info CL_KERNEL_NUM_ARGS = 0x1191;
constexpr cl_info CL_PROGRAM_BUILD_LOG = 0x1183;
constexpr cl_info CL_KERNEL_WORK_GROUP_SIZE = 0x11B0;  // a cl_kernel_work_group_info
constexpr cl_mem_flags CL_MEM_READ_WRITE = 1 << 0;
constexpr cl_bitfield CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT = 1 << 7;  // of CL_DEVICE_SINGLE_FP_CONFIG
constexpr cl_context_properties CL_CONTEXT_PLATFORM = 0x1084;
}  // namespace opencl

/// The ICD loader's entry points, bound once per loaded library.
struct OpenClApi {
  /// libOpenCL.so.1 (then libOpenCL.so), loaded on first use; throws BackendUnavailable naming
  /// each name tried. A later call tries again.
  static const OpenClApi& get();
  /// The API from the first of `candidates` that loads (tests ask for a library that is not
  /// there); a new table each call.
  static std::shared_ptr<const OpenClApi> load(const std::vector<std::string>& candidates);

  /// Throws, for a `result` other than CL_SUCCESS, ResourceError (out of resources, allocation
  /// failure, host memory) or RuntimeError naming `call` and the error, then `context`.
  ///   check(clFinish(queue), "clFinish", "after kernels add_k0")
  void check(opencl::cl_int result, const char* call, const std::string& context = "") const;

  using cl_int = opencl::cl_int;
  using cl_uint = opencl::cl_uint;
  using cl_info = opencl::cl_info;
  using cl_event = opencl::cl_event;
  using cl_mem = opencl::cl_mem;
  using cl_command_queue = opencl::cl_command_queue;
  using cl_program = opencl::cl_program;
  using cl_device_id = opencl::cl_device_id;
  using cl_context = opencl::cl_context;
  using cl_kernel = opencl::cl_kernel;
  cl_int (*clGetPlatformIDs)(cl_uint count, opencl::cl_platform_id* platforms, cl_uint* found) = nullptr;
  cl_int (*clGetPlatformInfo)(opencl::cl_platform_id platform, cl_info name, std::size_t size, void* value,
                              std::size_t* size_ret) = nullptr;
  cl_int (*clGetDeviceIDs)(opencl::cl_platform_id platform, opencl::cl_device_type type, cl_uint count,
                           cl_device_id* devices, cl_uint* found) = nullptr;
  cl_int (*clGetDeviceInfo)(cl_device_id device, cl_info name, std::size_t size, void* value,
                            std::size_t* size_ret) = nullptr;
  cl_context (*clCreateContext)(const opencl::cl_context_properties* properties, cl_uint device_count,
                                const cl_device_id* devices,
                                void (*notify)(const char*, const void*, std::size_t, void*), void* user_data,
                                cl_int* error) = nullptr;
  cl_command_queue (*clCreateCommandQueue)(cl_context context, cl_device_id device,
                                           opencl::cl_command_queue_properties properties,
                                           cl_int* error) = nullptr;
  cl_mem (*clCreateBuffer)(cl_context context, opencl::cl_mem_flags flags, std::size_t size, void* host,
                           cl_int* error) = nullptr;
  cl_int (*clEnqueueFillBuffer)(cl_command_queue queue, cl_mem buffer, const void* pattern,
                                std::size_t pattern_size, std::size_t offset, std::size_t size,
                                cl_uint wait_count, const cl_event* wait_list, cl_event* event) = nullptr;
  cl_int (*clEnqueueReadBuffer)(cl_command_queue queue, cl_mem buffer, opencl::cl_bool blocking,
                                std::size_t offset, std::size_t size, void* host, cl_uint wait_count,
                                const cl_event* wait_list, cl_event* event) = nullptr;
  cl_int (*clEnqueueWriteBuffer)(cl_command_queue queue, cl_mem buffer, opencl::cl_bool blocking,
                                 std::size_t offset, std::size_t size, const void* host, cl_uint wait_count,
                                 const cl_event* wait_list, cl_event* event) = nullptr;
  cl_int (*clEnqueueCopyBuffer)(cl_command_queue queue, cl_mem src, cl_mem dst, std::size_t src_offset,
                                std::size_t dst_offset, std::size_t size, cl_uint wait_count,
                                const cl_event* wait_list, cl_event* event) = nullptr;
  cl_program (*clCreateProgramWithSource)(cl_context context, cl_uint count, const char** strings,
                                          const std::size_t* lengths, cl_int* error) = nullptr;
  cl_program (*clCreateProgramWithBinary)(cl_context context, cl_uint device_count, const cl_device_id* devices,
                                          const std::size_t* lengths, const unsigned char** binaries,
                                          cl_int* binary_status, cl_int* error) = nullptr;
  cl_int (*clBuildProgram)(cl_program program, cl_uint device_count, const cl_device_id* devices,
                           const char* options, void (*notify)(cl_program, void*), void* user_data) = nullptr;
  cl_int (*clGetProgramBuildInfo)(cl_program program, cl_device_id device, cl_info name, std::size_t size,
                                  void* value, std::size_t* size_ret) = nullptr;
  cl_int (*clGetProgramInfo)(cl_program program, cl_info name, std::size_t size, void* value,
                             std::size_t* size_ret) = nullptr;
  cl_kernel (*clCreateKernel)(cl_program program, const char* name, cl_int* error) = nullptr;
  cl_int (*clGetKernelInfo)(cl_kernel kernel, cl_info name, std::size_t size, void* value,
                            std::size_t* size_ret) = nullptr;
  cl_int (*clGetKernelWorkGroupInfo)(cl_kernel kernel, cl_device_id device, cl_info name, std::size_t size,
                                     void* value, std::size_t* size_ret) = nullptr;
  cl_int (*clSetKernelArg)(cl_kernel kernel, cl_uint index, std::size_t size, const void* value) = nullptr;
  cl_int (*clEnqueueNDRangeKernel)(cl_command_queue queue, cl_kernel kernel, cl_uint dimensions,
                                   const std::size_t* offset, const std::size_t* global,
                                   const std::size_t* local, cl_uint wait_count, const cl_event* wait_list,
                                   cl_event* event) = nullptr;
  cl_int (*clEnqueueMarkerWithWaitList)(cl_command_queue queue, cl_uint wait_count, const cl_event* wait_list,
                                        cl_event* event) = nullptr;
  cl_int (*clWaitForEvents)(cl_uint count, const cl_event* events) = nullptr;
  cl_int (*clFlush)(cl_command_queue queue) = nullptr;
  cl_int (*clFinish)(cl_command_queue queue) = nullptr;
  cl_int (*clReleaseEvent)(cl_event event) = nullptr;
  cl_int (*clReleaseKernel)(cl_kernel kernel) = nullptr;
  cl_int (*clReleaseProgram)(cl_program program) = nullptr;
  cl_int (*clReleaseMemObject)(cl_mem buffer) = nullptr;
  cl_int (*clReleaseCommandQueue)(cl_command_queue queue) = nullptr;
  cl_int (*clReleaseContext)(cl_context context) = nullptr;

  /// The library that loaded ("libOpenCL.so.1").
  std::string library;
};

class Device;
/// open_opencl (device.h) through `api`, which must outlive the device: tests give it a table with
/// an entry point replaced, to see what the device makes of a driver's answer PoCL never gives.
std::shared_ptr<Device> open_opencl_through(const OpenClApi& api, int platform, int device);

/// "CL_OUT_OF_RESOURCES" for -5; "OpenCL error -77" for a code cl.h does not name.
std::string opencl_error_name(opencl::cl_int code);

}  // namespace cannl::backends::gpu
