// NVRTC loaded at run time (see nvrtc_api.h). The declarations are those of nvrtc.h (CUDA 12, 13).
#include "backends/gpu/nvrtc_api.h"

#include <atomic>
#include <memory>
#include <mutex>

#include "backends/gpu/api_library.h"
#include "backends/gpu/device.h"
#include "cannl/support/error.h"

namespace cannl::backends::gpu {

namespace {

using nvrtcResult = int;
struct NvrtcProgramState;
using nvrtcProgram = NvrtcProgramState*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;
constexpr nvrtcResult NVRTC_ERROR_COMPILATION = 6;

struct NvrtcApi {
  nvrtcResult (*nvrtcVersion)(int* major, int* minor) = nullptr;
  const char* (*nvrtcGetErrorString)(nvrtcResult result) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram* program, const char* source, const char* name,
                                    int header_count, const char* const* headers,
                                    const char* const* include_names) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram* program) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram program, int option_count,
                                     const char* const* options) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram program, std::size_t* size) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram program, char* log) = nullptr;
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram program, std::size_t* size) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram program, char* ptx) = nullptr;
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram program, std::size_t* size) = nullptr;  // optional
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram program, char* cubin) = nullptr;            // optional
  std::string library;

  std::string describe(nvrtcResult result) const {
    const char* text = nvrtcGetErrorString(result);
    return text != nullptr ? text : "nvrtcResult " + std::to_string(result);
  }
  void check(nvrtcResult result, const char* call) const {
    if (result != NVRTC_SUCCESS) throw RuntimeError(std::string("NVRTC: ") + call + " failed: " + describe(result));
  }
};

NvrtcApi load_nvrtc() {
  const ApiLibrary lib(nvrtc_candidates(), "NVRTC (the CUDA run-time compiler)");
  NvrtcApi api;
  lib.bind(api.nvrtcVersion, "nvrtcVersion");
  lib.bind(api.nvrtcGetErrorString, "nvrtcGetErrorString");
  lib.bind(api.nvrtcCreateProgram, "nvrtcCreateProgram");
  lib.bind(api.nvrtcDestroyProgram, "nvrtcDestroyProgram");
  lib.bind(api.nvrtcCompileProgram, "nvrtcCompileProgram");
  lib.bind(api.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
  lib.bind(api.nvrtcGetProgramLog, "nvrtcGetProgramLog");
  lib.bind(api.nvrtcGetPTXSize, "nvrtcGetPTXSize");
  lib.bind(api.nvrtcGetPTX, "nvrtcGetPTX");
  lib.bind_optional(api.nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
  lib.bind_optional(api.nvrtcGetCUBIN, "nvrtcGetCUBIN");
  api.library = lib.path();
  return api;
}

// Loaded once per process (never freed, like the driver's table); a failed load is retried by
// the next call.
const NvrtcApi& nvrtc() {
  static std::mutex mutex;
  static const NvrtcApi* loaded = nullptr;
  std::lock_guard lock(mutex);
  if (loaded == nullptr) loaded = new NvrtcApi(load_nvrtc());
  return *loaded;
}

// Destroys the program on every path out of a compile.
struct ProgramGuard {
  const NvrtcApi& api;
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program != nullptr) api.nvrtcDestroyProgram(&program);
  }
};

// Reads one of the program's outputs through its (size, get) pair; sizes count a final NUL
// for text outputs, which `text` drops.
template <class SizeFn, class GetFn>
std::string program_output(const NvrtcApi& api, nvrtcProgram program, SizeFn size_fn, GetFn get_fn,
                           const char* call, bool text) {
  std::size_t size = 0;
  api.check(size_fn(program, &size), call);
  std::string out(size, '\0');
  if (size > 0) api.check(get_fn(program, out.data()), call);
  if (text && !out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

std::atomic<int> g_compilations{0};

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

}  // namespace

int nvrtc_compilations() { return g_compilations.load(); }

std::vector<std::string> nvrtc_candidates() {
  return cuda_toolkit_candidates({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"});
}

std::vector<std::string> nvrtc_options(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "-default-device", "--std=c++17", "-lineinfo",
          "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true"};
}

std::string nvrtc_version() {
  const NvrtcApi& api = nvrtc();
  int major = 0, minor = 0;
  api.check(api.nvrtcVersion(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcOutput nvrtc_compile_program(const std::string& source, const std::vector<std::string>& options,
                                  const std::string& program_name) {
  const NvrtcApi& api = nvrtc();
  ProgramGuard guard{api};
  api.check(api.nvrtcCreateProgram(&guard.program, source.c_str(), program_name.c_str(), 0, nullptr, nullptr),
            "nvrtcCreateProgram");
  std::vector<const char*> raw;
  for (const auto& option : options) raw.push_back(option.c_str());
  ++g_compilations;
  const nvrtcResult compiled = api.nvrtcCompileProgram(guard.program, static_cast<int>(raw.size()), raw.data());
  NvrtcOutput out;
  out.log = program_output(api, guard.program, api.nvrtcGetProgramLogSize, api.nvrtcGetProgramLog,
                           "nvrtcGetProgramLog", true);
  if (compiled == NVRTC_ERROR_COMPILATION)
    throw CompileError("NVRTC " + nvrtc_version() + " (" + api.library + ") rejected the generated CUDA source " +
                       program_name + "\n  options: " + joined(options) + "\n  log:\n" + out.log +
                       "\n  If the generated code itself is invalid, please report it with the source.");
  // Another failure names an option, above all an architecture this NVRTC does not know (a GPU
  // newer than the toolkit, or one older than it still compiles for); only the log says which.
  if (compiled != NVRTC_SUCCESS)
    throw CompileError("NVRTC " + nvrtc_version() + " (" + api.library + ") could not compile " + program_name +
                       ": " + api.describe(compiled) + "\n  options: " + joined(options) + "\n  log:\n" + out.log +
                       "\n  An unknown --gpu-architecture means this NVRTC does not compile for the device: use "
                       "a CUDA toolkit that supports it.");
  out.ptx = program_output(api, guard.program, api.nvrtcGetPTXSize, api.nvrtcGetPTX, "nvrtcGetPTX", true);
  if (api.nvrtcGetCUBINSize != nullptr && api.nvrtcGetCUBIN != nullptr) {
    std::size_t size = 0;
    // No cubin for a virtual architecture (compute_90): the size is 0 then.
    if (api.nvrtcGetCUBINSize(guard.program, &size) == NVRTC_SUCCESS && size > 0)
      out.cubin = program_output(api, guard.program, api.nvrtcGetCUBINSize, api.nvrtcGetCUBIN,
                                 "nvrtcGetCUBIN", false);
  }
  return out;
}

std::string nvrtc_compile(const std::string& source, const std::string& arch) {
  return nvrtc_compile_program(source, nvrtc_options(arch)).ptx;
}

}  // namespace cannl::backends::gpu
