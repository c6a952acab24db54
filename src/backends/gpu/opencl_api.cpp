// OpenCL loaded at run time (see opencl_api.h).
#include "backends/gpu/opencl_api.h"

#include <mutex>
#include <utility>

#include "backends/gpu/api_library.h"
#include "cannl/support/error.h"

namespace cannl::backends::gpu {

namespace {

// cl.h's error codes by name (OpenCL 1.2, and the ICD loader's "no platform").
constexpr std::pair<opencl::cl_int, const char*> kErrorNames[] = {
    {-1, "CL_DEVICE_NOT_FOUND"},
    {-2, "CL_DEVICE_NOT_AVAILABLE"},
    {-3, "CL_COMPILER_NOT_AVAILABLE"},
    {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"},
    {-6, "CL_OUT_OF_HOST_MEMORY"},
    {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
    {-8, "CL_MEM_COPY_OVERLAP"},
    {-9, "CL_IMAGE_FORMAT_MISMATCH"},
    {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
    {-11, "CL_BUILD_PROGRAM_FAILURE"},
    {-12, "CL_MAP_FAILURE"},
    {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
    {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
    {-15, "CL_COMPILE_PROGRAM_FAILURE"},
    {-16, "CL_LINKER_NOT_AVAILABLE"},
    {-17, "CL_LINK_PROGRAM_FAILURE"},
    {-18, "CL_DEVICE_PARTITION_FAILED"},
    {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
    {-30, "CL_INVALID_VALUE"},
    {-31, "CL_INVALID_DEVICE_TYPE"},
    {-32, "CL_INVALID_PLATFORM"},
    {-33, "CL_INVALID_DEVICE"},
    {-34, "CL_INVALID_CONTEXT"},
    {-35, "CL_INVALID_QUEUE_PROPERTIES"},
    {-36, "CL_INVALID_COMMAND_QUEUE"},
    {-37, "CL_INVALID_HOST_PTR"},
    {-38, "CL_INVALID_MEM_OBJECT"},
    {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
    {-40, "CL_INVALID_IMAGE_SIZE"},
    {-41, "CL_INVALID_SAMPLER"},
    {-42, "CL_INVALID_BINARY"},
    {-43, "CL_INVALID_BUILD_OPTIONS"},
    {-44, "CL_INVALID_PROGRAM"},
    {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
    {-46, "CL_INVALID_KERNEL_NAME"},
    {-47, "CL_INVALID_KERNEL_DEFINITION"},
    {-48, "CL_INVALID_KERNEL"},
    {-49, "CL_INVALID_ARG_INDEX"},
    {-50, "CL_INVALID_ARG_VALUE"},
    {-51, "CL_INVALID_ARG_SIZE"},
    {-52, "CL_INVALID_KERNEL_ARGS"},
    {-53, "CL_INVALID_WORK_DIMENSION"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE"},
    {-55, "CL_INVALID_WORK_ITEM_SIZE"},
    {-56, "CL_INVALID_GLOBAL_OFFSET"},
    {-57, "CL_INVALID_EVENT_WAIT_LIST"},
    {-58, "CL_INVALID_EVENT"},
    {-59, "CL_INVALID_OPERATION"},
    {-60, "CL_INVALID_GL_OBJECT"},
    {-61, "CL_INVALID_BUFFER_SIZE"},
    {-62, "CL_INVALID_MIP_LEVEL"},
    {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
    {-64, "CL_INVALID_PROPERTY"},
    {-65, "CL_INVALID_IMAGE_DESCRIPTOR"},
    {-66, "CL_INVALID_COMPILER_OPTIONS"},
    {-67, "CL_INVALID_LINKER_OPTIONS"},
    {-68, "CL_INVALID_DEVICE_PARTITION_COUNT"},
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
};

std::shared_ptr<const OpenClApi> bind_opencl(const ApiLibrary& lib) {
  auto api = std::make_shared<OpenClApi>();
  lib.bind(api->clGetPlatformIDs, "clGetPlatformIDs");
  lib.bind(api->clGetPlatformInfo, "clGetPlatformInfo");
  lib.bind(api->clGetDeviceIDs, "clGetDeviceIDs");
  lib.bind(api->clGetDeviceInfo, "clGetDeviceInfo");
  lib.bind(api->clCreateContext, "clCreateContext");
  lib.bind(api->clCreateCommandQueue, "clCreateCommandQueue");
  lib.bind(api->clCreateBuffer, "clCreateBuffer");
  lib.bind(api->clEnqueueFillBuffer, "clEnqueueFillBuffer");
  lib.bind(api->clEnqueueReadBuffer, "clEnqueueReadBuffer");
  lib.bind(api->clEnqueueWriteBuffer, "clEnqueueWriteBuffer");
  lib.bind(api->clEnqueueCopyBuffer, "clEnqueueCopyBuffer");
  lib.bind(api->clCreateProgramWithSource, "clCreateProgramWithSource");
  lib.bind(api->clCreateProgramWithBinary, "clCreateProgramWithBinary");
  lib.bind(api->clBuildProgram, "clBuildProgram");
  lib.bind(api->clGetProgramBuildInfo, "clGetProgramBuildInfo");
  lib.bind(api->clGetProgramInfo, "clGetProgramInfo");
  lib.bind(api->clCreateKernel, "clCreateKernel");
  lib.bind(api->clGetKernelInfo, "clGetKernelInfo");
  lib.bind(api->clGetKernelWorkGroupInfo, "clGetKernelWorkGroupInfo");
  lib.bind(api->clSetKernelArg, "clSetKernelArg");
  lib.bind(api->clEnqueueNDRangeKernel, "clEnqueueNDRangeKernel");
  lib.bind(api->clEnqueueMarkerWithWaitList, "clEnqueueMarkerWithWaitList");
  lib.bind(api->clWaitForEvents, "clWaitForEvents");
  lib.bind(api->clFlush, "clFlush");
  lib.bind(api->clFinish, "clFinish");
  lib.bind(api->clReleaseEvent, "clReleaseEvent");
  lib.bind(api->clReleaseKernel, "clReleaseKernel");
  lib.bind(api->clReleaseProgram, "clReleaseProgram");
  lib.bind(api->clReleaseMemObject, "clReleaseMemObject");
  lib.bind(api->clReleaseCommandQueue, "clReleaseCommandQueue");
  lib.bind(api->clReleaseContext, "clReleaseContext");
  api->library = lib.path();
  return api;
}

}  // namespace

std::string opencl_error_name(opencl::cl_int code) {
  for (const auto& [value, name] : kErrorNames)
    if (value == code) return name;
  return "OpenCL error " + std::to_string(code);
}

std::shared_ptr<const OpenClApi> OpenClApi::load(const std::vector<std::string>& candidates) {
  return bind_opencl(ApiLibrary(candidates, "OpenCL"));
}

const OpenClApi& OpenClApi::get() {
  // A failed load is retried by the next call. Never freed: devices and their buffers use the
  // table until they go, and one held by a static may go after every static of this file.
  static std::mutex mutex;
  static const std::shared_ptr<const OpenClApi>* loaded = nullptr;
  std::lock_guard lock(mutex);
  if (loaded == nullptr) loaded = new std::shared_ptr<const OpenClApi>(load({"libOpenCL.so.1", "libOpenCL.so"}));
  return **loaded;
}

void OpenClApi::check(opencl::cl_int result, const char* call, const std::string& context) const {
  if (result == opencl::CL_SUCCESS) return;
  const std::string message = std::string(call) + " failed: " + opencl_error_name(result) +
                              (context.empty() ? "" : "; " + context);
  if (result == opencl::CL_OUT_OF_RESOURCES || result == opencl::CL_MEM_OBJECT_ALLOCATION_FAILURE ||
      result == opencl::CL_OUT_OF_HOST_MEMORY)
    throw ResourceError("the OpenCL device is out of memory or resources: " + message);
  throw RuntimeError("OpenCL: " + message);
}

}  // namespace cannl::backends::gpu
