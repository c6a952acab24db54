// Contexts (a backend and its buffers), routines and the configuration.
//
//   ctx = cannl.Context.cpu()            # or interpreter(), cuda(0), opencl(0, 0), from_config()
//   ctx.run(routine, [batch_index])      # the GIL is released while it runs
//   cannl.config.set("cc_threads", "2")
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "cannl/support/config.h"

namespace cannl::python {
namespace {

void bind_routine(nb::module_& m) {
  nb::class_<runtime::Routine>(m, "Routine", "A compiled routine linked to one context.")
      .def_prop_ro("name", &runtime::Routine::name)
      .def_prop_ro("id", &runtime::Routine::id)
      .def_prop_ro("source", &runtime::Routine::source, "Generated source (empty for the interpreter).")
      .def_prop_ro("statics", [](const runtime::Routine& r) { return r.statics(); },
                   "The static indices run() takes, in order.")
      .def("__repr__", [](const runtime::Routine& r) {
        return "<cannl.Routine '" + r.name() + "' statics " + std::to_string(r.statics().size()) + ">";
      });
}

void bind_context(nb::module_& m) {
  using runtime::Context;
  auto c = nb::class_<Context>(m, "Context",
                               "A backend, the buffers of one compilation lineage and the order its\n"
                               "routines must run in. A handle: copies share the same state.");
  c.def_static("cpu", &Context::cpu, kReleased, "The C backend (system C compiler).")
      .def_static("cc", &Context::cpu, kReleased, "Context.cpu().")
      .def_static("interpreter", &Context::interpreter, kReleased, "The reference interpreter.")
      .def_static("gpu_emulator", &Context::gpu_emulator, kReleased,
                  "The GPU pipeline (schedule, fission) run on the interpreter, every kernel\n"
                  "race-checked: a race is a RuntimeError naming the kernel and the cell.")
      .def_static("cuda", &Context::cuda, nb::arg("ordinal") = 0, kReleased,
                  "CUDA device `ordinal` (driver and NVRTC loaded at run time); BackendUnavailable\n"
                  "names what is missing.")
      .def_static("opencl", &Context::opencl, nb::arg("platform") = 0, nb::arg("device") = 0, kReleased,
                  "An OpenCL device (PoCL runs it on the CPU).")
      .def_static("from_config", &Context::from_config, kReleased,
                  "The backend config key `backend` names (cc, interpreter, gpu-emulator, cuda, opencl, auto).")
      .def_prop_ro("backend_name", [](const Context& ctx) { return std::string(ctx.backend_name()); })
      .def("twin", &Context::twin, kReleased, "A new context holding a copy of every buffer.")
      .def("run",
           [](Context& ctx, const runtime::Routine& r, const std::vector<std::int64_t>& statics) {
             ctx.run(r, statics);
           },
           nb::arg("routine"), nb::arg("statics") = std::vector<std::int64_t>{}, kReleased,
           "Runs a routine with its static index values (e.g. [batch]).")
      .def("run",
           [](Context& ctx, const runtime::Routine& r, std::int64_t index) {
             const std::int64_t statics[] = {index};
             ctx.run(r, statics);
           },
           nb::arg("routine"), nb::arg("index"), kReleased)
      .def("synchronize", &Context::synchronize, kReleased, "Waits for queued GPU work.")
      .def("has_buffer", [](const Context& ctx, const Tensor& t) { return ctx.has_buffer(t.value()); },
           nb::arg("tensor"), kLocked)
      .def("is_initialized", [](const Context& ctx, const Tensor& t) { return ctx.is_initialized(t.value()); },
           nb::arg("tensor"), kLocked)
      .def("__repr__", [](const Context& ctx) {
        return "<cannl.Context backend " + std::string(ctx.backend_name()) + ">";
      });
  add_context_array_methods(c);
}

void bind_config(nb::module_& m) {
  nb::module_ config = m.def_submodule("config", "Config keys (docs/config.md): file < env < overrides.");
  config.def("get", [](const std::string& key) { return config::get(key); }, nb::arg("key"), kLocked,
             "The resolved value of a config key:  cannl.config.get(\"backend\") == \"cc\"");
  config.def("set", [](const std::string& key, const std::string& value) { config::set_override(key, value); },
             nb::arg("key"), nb::arg("value"), kLocked,
             "Overrides a key (highest priority); an empty value removes the override.");
  config.def("clear", &config::clear_overrides, kLocked, "Removes every override set().");
  config.def("source_of", [](const std::string& key) { return config::source_of(key); }, nb::arg("key"), kLocked);
  config.def("reload", &config::reload, kLocked,
             "Re-reads the cannl_config file and CANNL_* variables (after os.chdir or os.environ changes).");
  config.def("known_keys", [] {
    std::vector<std::pair<std::string, std::string>> keys;
    for (const auto& k : config::known_keys()) keys.emplace_back(k.name, k.description);
    return keys;
  }, kLocked, "(name, description) of every key.");
}

}  // namespace

void bind_runtime(nb::module_& m) {
  bind_routine(m);
  bind_context(m);
  bind_config(m);
}

}  // namespace cannl::python
