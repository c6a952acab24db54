// Backends by name, and the automatic choice (backend.h: make_backend).
#include <string>

#include "cannl/backends/backend.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::backends {

namespace {

int config_index(std::string_view key) { return static_cast<int>(config::get_int_in(key, 0, 1 << 16)); }

std::shared_ptr<Backend> make_named(std::string_view name) {
  if (name == "cc") return make_cc_backend();
  if (name == "interpreter") return make_interpreter_backend();
  if (name == "gpu-emulator") return make_gpu_emulator_backend();
  if (name == "cuda") return make_cuda_backend(config_index("cuda_device"));
  if (name == "cuda-cpu") return make_cuda_cpu_backend();
  if (name == "hip") return make_hip_backend(config_index("hip_device"));
  if (name == "opencl") return make_opencl_backend(config_index("opencl_platform"), config_index("opencl_device"));
  throw ConfigError("backend '" + std::string(name) +
                    "' does not exist; valid values: cc, interpreter, gpu-emulator, cuda, cuda-cpu, hip, opencl, "
                    "auto");
}

}  // namespace

std::shared_ptr<Backend> make_backend(std::string_view name, std::vector<std::string>* skipped) {
  if (name != "auto") return make_named(name);
  std::string reasons;
  for (const std::string_view candidate : {"cuda", "hip", "opencl", "cc"}) {
    try {
      return make_named(candidate);
    } catch (const BackendUnavailable& e) {
      const std::string reason = std::string(candidate) + ": " + e.what();
      if (skipped != nullptr) skipped->push_back(reason);
      reasons += "\n  " + reason;
    }
  }
  throw BackendUnavailable("no backend could be opened:" + reasons);
}

}  // namespace cannl::backends
