// Context construction, backend selection and simple queries.
#include <string>

#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "runtime/context_state.h"

namespace cannl::runtime {

Context::Context(std::shared_ptr<backends::Backend> backend)
    : state_(std::make_shared<ContextState>(std::move(backend))) {}

Context Context::cpu() { return Context(backends::make_cc_backend()); }

Context Context::interpreter() { return Context(backends::make_interpreter_backend()); }

Context Context::from_config() {
  const std::string name = config::get("backend");
  if (name == "cc") return cpu();
  if (name == "interpreter") return interpreter();
  throw ConfigError("config key 'backend' has value '" + name + "' (from " +
                    config::source_of("backend") +
                    "), which names no backend; valid values: cc, interpreter");
}

std::string_view Context::backend_name() const { return state_->backend->name(); }

bool Context::has_buffer(const ir::NodeRef& node) const {
  return node != nullptr && state_->find_buffer(*node) != nullptr;
}

bool Context::is_initialized(const ir::NodeRef& node) const {
  return node != nullptr && state_->initialized.contains(node->id);
}

}  // namespace cannl::runtime
