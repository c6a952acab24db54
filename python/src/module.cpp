// The extension module cannl._cannl; the package cannl (python/cannl/) re-exports it in the
// C++ namespaces' shape (cannl, cannl.nn, cannl.train, cannl.io, cannl.datasets).
#include "bindings.h"

namespace cannl::python {

std::recursive_mutex& library_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

}  // namespace cannl::python

NB_MODULE(_cannl, m) {
  using namespace cannl::python;
  m.doc() = "cannl: a deep-learning compiler (C++20) driven from Python.";
  bind_errors(m);
  bind_tensor(m);
  bind_runtime(m);
  bind_arrays(m);
  bind_nn(m);
  bind_train(m);
  bind_io(m);
}
