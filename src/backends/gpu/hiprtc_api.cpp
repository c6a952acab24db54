// hiprtc loaded at run time (see hiprtc_api.h). The declarations are those of hiprtc.h (ROCm 5.2,
// 6.x).
#include "backends/gpu/hiprtc_api.h"

#include <atomic>
#include <mutex>

#include "backends/gpu/api_library.h"
#include "backends/gpu/hip_runtime_api.h"
#include "cannl/support/error.h"

namespace cannl::backends::gpu {

namespace {

using hiprtcResult = int;
struct HiprtcProgramState;
using hiprtcProgram = HiprtcProgramState*;
constexpr hiprtcResult HIPRTC_SUCCESS = 0;
constexpr hiprtcResult HIPRTC_ERROR_COMPILATION = 6;

struct HiprtcApi {
  hiprtcResult (*hiprtcVersion)(int* major, int* minor) = nullptr;
  const char* (*hiprtcGetErrorString)(hiprtcResult result) = nullptr;
  hiprtcResult (*hiprtcCreateProgram)(hiprtcProgram* program, const char* source, const char* name,
                                      int header_count, const char** headers, const char** include_names) = nullptr;
  hiprtcResult (*hiprtcDestroyProgram)(hiprtcProgram* program) = nullptr;
  hiprtcResult (*hiprtcCompileProgram)(hiprtcProgram program, int option_count, const char** options) = nullptr;
  hiprtcResult (*hiprtcGetProgramLogSize)(hiprtcProgram program, std::size_t* size) = nullptr;
  hiprtcResult (*hiprtcGetProgramLog)(hiprtcProgram program, char* log) = nullptr;
  hiprtcResult (*hiprtcGetCodeSize)(hiprtcProgram program, std::size_t* size) = nullptr;
  hiprtcResult (*hiprtcGetCode)(hiprtcProgram program, char* code) = nullptr;
  std::string library;

  std::string describe(hiprtcResult result) const {
    const char* text = hiprtcGetErrorString(result);
    return text != nullptr ? text : "hiprtcResult " + std::to_string(result);
  }
  void check(hiprtcResult result, const char* call) const {
    if (result != HIPRTC_SUCCESS) throw RuntimeError(std::string("hiprtc: ") + call + " failed: " + describe(result));
  }
};

HiprtcApi load_hiprtc() {
  const ApiLibrary lib(hiprtc_candidates(), "hiprtc (the HIP run-time compiler)");
  HiprtcApi api;
  lib.bind(api.hiprtcVersion, "hiprtcVersion");
  lib.bind(api.hiprtcGetErrorString, "hiprtcGetErrorString");
  lib.bind(api.hiprtcCreateProgram, "hiprtcCreateProgram");
  lib.bind(api.hiprtcDestroyProgram, "hiprtcDestroyProgram");
  lib.bind(api.hiprtcCompileProgram, "hiprtcCompileProgram");
  lib.bind(api.hiprtcGetProgramLogSize, "hiprtcGetProgramLogSize");
  lib.bind(api.hiprtcGetProgramLog, "hiprtcGetProgramLog");
  lib.bind(api.hiprtcGetCodeSize, "hiprtcGetCodeSize");
  lib.bind(api.hiprtcGetCode, "hiprtcGetCode");
  api.library = lib.path();
  return api;
}

// Loaded once per process (never freed, like the runtime's table); a failed load is retried by
// the next call.
const HiprtcApi& hiprtc() {
  static std::mutex mutex;
  static const HiprtcApi* loaded = nullptr;
  std::lock_guard lock(mutex);
  if (loaded == nullptr) loaded = new HiprtcApi(load_hiprtc());
  return *loaded;
}

// Destroys the program on every path out of a compile.
struct ProgramGuard {
  const HiprtcApi& api;
  hiprtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program != nullptr) api.hiprtcDestroyProgram(&program);
  }
};

template <class SizeFn, class GetFn>
std::string program_output(const HiprtcApi& api, hiprtcProgram program, SizeFn size_fn, GetFn get_fn,
                           const char* call, bool text) {
  std::size_t size = 0;
  api.check(size_fn(program, &size), call);
  std::string out(size, '\0');
  if (size > 0) api.check(get_fn(program, out.data()), call);
  if (text) out.resize(out.find('\0') == std::string::npos ? out.size() : out.find('\0'));
  return out;
}

std::atomic<int> g_compilations{0};

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

}  // namespace

int hiprtc_compilations() { return g_compilations.load(); }

std::vector<std::string> hiprtc_candidates() {
  std::vector<std::string> out = rocm_candidates({"libhiprtc.so.6", "libhiprtc.so.5", "libhiprtc.so"});
  for (const auto& runtime : hip_runtime_candidates()) out.push_back(runtime);
  return out;
}

std::vector<std::string> hiprtc_options(const std::string& arch) {
  return {"--offload-arch=" + arch, "-O3", "-std=c++17", "-ffp-contract=off"};
}

std::string hiprtc_version() {
  const HiprtcApi& api = hiprtc();
  int major = 0, minor = 0;
  api.check(api.hiprtcVersion(&major, &minor), "hiprtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string hiprtc_library() { return hiprtc().library; }

namespace {

void check_no_second_clang() {
  // hiprtc compiles through ROCm's comgr, loaded on first use; a comgr that carries its own clang
  // beside a process's libclang-cpp (PoCL's) registers LLVM's options twice, and LLVM aborts.
  if (!loaded_library_containing("libamd_comgr").empty()) return;
  const std::string clang = loaded_library_containing("libclang-cpp.so");
  if (!clang.empty())
    throw BackendUnavailable("hiprtc cannot compile in this process: it holds " + clang +
                             " (PoCL's, the OpenCL on the CPU), and ROCm's comgr, which hiprtc loads, carries "
                             "a clang of its own; LLVM aborts a process that registers its options twice. "
                             "Compile HIP in a process of its own (the hip_compile_modules tool).");
}

}  // namespace

HiprtcOutput hiprtc_compile_program(const std::string& source, const std::vector<std::string>& options,
                                    const std::string& program_name) {
  const HiprtcApi& api = hiprtc();
  check_no_second_clang();
  ProgramGuard guard{api};
  api.check(api.hiprtcCreateProgram(&guard.program, source.c_str(), program_name.c_str(), 0, nullptr, nullptr),
            "hiprtcCreateProgram");
  std::vector<const char*> raw;
  for (const auto& option : options) raw.push_back(option.c_str());
  ++g_compilations;
  const hiprtcResult compiled = api.hiprtcCompileProgram(guard.program, static_cast<int>(raw.size()), raw.data());
  HiprtcOutput out;
  out.log = program_output(api, guard.program, api.hiprtcGetProgramLogSize, api.hiprtcGetProgramLog,
                           "hiprtcGetProgramLog", true);
  if (compiled == HIPRTC_ERROR_COMPILATION)
    throw CompileError("hiprtc " + hiprtc_version() + " (" + api.library + ") rejected the generated HIP source " +
                       program_name + "\n  options: " + joined(options) + "\n  log:\n" + out.log +
                       "\n  If the generated code itself is invalid, please report it with the source.");
  api.check(compiled, "hiprtcCompileProgram");
  out.code = program_output(api, guard.program, api.hiprtcGetCodeSize, api.hiprtcGetCode, "hiprtcGetCode", false);
  return out;
}

}  // namespace cannl::backends::gpu
