// Context construction, backend selection and simple queries.
#include <string>

#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/log.h"
#include "runtime/context_state.h"

namespace cannl::runtime {

Context::Context(std::shared_ptr<backends::Backend> backend)
    : state_(std::make_shared<ContextState>(std::move(backend))) {}

Context Context::cpu() { return Context(backends::make_cc_backend()); }

Context Context::interpreter() { return Context(backends::make_interpreter_backend()); }

Context Context::gpu_emulator() { return Context(backends::make_gpu_emulator_backend()); }

Context Context::cuda(int ordinal) { return Context(backends::make_cuda_backend(ordinal)); }

Context Context::hip(int ordinal) { return Context(backends::make_hip_backend(ordinal)); }

Context Context::opencl(int platform, int device) { return Context(backends::make_opencl_backend(platform, device)); }

Context Context::from_config() {
  const std::string name = config::get("backend");
  if (name == "multidev_cc") return cpu_devices(0);
  if (name == "cuda" && !config::get("cuda_devices").empty()) return cuda_devices({});
  std::vector<std::string> skipped;
  try {
    auto backend = backends::make_backend(name, &skipped);
    if (logging::debug_level() >= 1) {
      for (const auto& reason : skipped) logging::info("backend=auto skipped " + reason);
    }
    return Context(std::move(backend));
  } catch (const ConfigError&) {
    throw ConfigError("config key 'backend' has value '" + name + "' (from " + config::source_of("backend") +
                      "), which names no backend; valid values: cc, multidev_cc, interpreter, "
                      "gpu-emulator, cuda, cuda-cpu, hip, opencl, auto");
  }
}

void Context::synchronize() {
  state_->wait_for_all_work();
}

std::string_view Context::backend_name() const { return state_->backend->name(); }

bool Context::has_buffer(const ir::NodeRef& node) const {
  return node != nullptr && state_->find_buffer(*node) != nullptr;
}

bool Context::is_initialized(const ir::NodeRef& node) const {
  return node != nullptr && state_->initialized.contains(node->id);
}

}  // namespace cannl::runtime
