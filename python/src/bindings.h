#pragma once
// Shared pieces of the Python binding. The binding sits above cannl's public API (it includes
// only include/cannl/ headers) and nothing in the library knows of it. One file binds each area:
// errors.cpp, tensor.cpp, arrays.cpp, runtime.cpp, nn.cpp, train.cpp, io.cpp.
//
//   m.def("compile_step", &compile_step, kReleased);   // long call: GIL released, library locked

#include <nanobind/nanobind.h>

#include <mutex>

#include "cannl/runtime/context.h"
#include "cannl/tensor/tensor.h"

namespace cannl::python {

namespace nb = nanobind;

/// cannl's process state (shape inference, tensor ids, the config, compile caches) is not
/// thread-safe, so one lock serializes every call into the library. It is recursive: a Python
/// callback that fit() runs (on_epoch) may call cannl again on the same thread.
std::recursive_mutex& library_mutex();

/// Guard of calls that may run long (compiles, runs, fit, GPT-2): the GIL is released so other
/// Python threads run meanwhile, then the library lock taken. Lock order is always GIL-free
/// lock, then GIL, so a thread waiting for the lock never holds the GIL.
struct Released {
  nb::gil_scoped_release release;
  std::lock_guard<std::recursive_mutex> lock{library_mutex()};
};

/// Guard of short calls (graph building): the library lock taken with the GIL released, then the
/// GIL taken back for the call (which may touch Python objects).
struct Locked {
  nb::gil_scoped_release release;
  std::lock_guard<std::recursive_mutex> lock{library_mutex()};
  nb::gil_scoped_acquire acquire;
};

inline constexpr auto kReleased = nb::call_guard<Released>();
inline constexpr auto kLocked = nb::call_guard<Locked>();

/// Remembers that `ctx` holds the values of `t` (it compiled a routine using it, or values were
/// uploaded), so t.numpy(), np.asarray(t) and np.from_dlpack(t) find them. The last context
/// wins; the record does not keep the context alive.
void remember_context(const Tensor& t, const runtime::Context& ctx);
/// remember_context for every tensor the roots depend on.
void remember_context_of_graph(const std::vector<Tensor>& roots, const runtime::Context& ctx);

/// The Context methods reading and writing host arrays (arrays.cpp), added where Context is bound.
void add_context_array_methods(nb::class_<runtime::Context>& c);
/// Tensor.numpy, __array__, __dlpack__, __dlpack_device__ (arrays.cpp).
void add_tensor_array_methods(nb::class_<Tensor>& c);

/// The buffer protocol of Tensor (arrays.cpp): the same memory as Tensor.numpy().
int tensor_getbuffer(PyObject* self, Py_buffer* view, int flags);

void bind_errors(nb::module_& m);
void bind_tensor(nb::module_& m);
void bind_arrays(nb::module_& m);
void bind_runtime(nb::module_& m);
void bind_nn(nb::module_& m);
void bind_train(nb::module_& m);
void bind_io(nb::module_& m);

}  // namespace cannl::python
