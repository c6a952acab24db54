// C++ errors as Python exceptions of the same names and messages: cannl.Error is the base,
// cannl.UserError and cannl.InternalError derive from it, and every UserError subclass of
// include/cannl/support/error.h from cannl.UserError.
//
//   try: cannl.einsum("ij;jk=>", a, b)
//   except cannl.EinsumSyntaxError as e: print(e)
#include <nanobind/stl/string.h>

#include <stdexcept>

#include "bindings.h"

#include "cannl/support/error.h"

namespace cannl::python {
namespace {

/// A translator per C++ class: nanobind tries the most recently registered first, so the
/// subclasses (registered after UserError) are matched before their base.
template <typename CppError>
void bind_error(nb::module_& m, const char* name, nb::handle base, const char* doc) {
  auto type = nb::exception<CppError>(m, name, base);
  type.attr("__doc__") = doc;
  type.attr("__module__") = "cannl";
}

}  // namespace

void bind_errors(nb::module_& m) {
  nb::object error = nb::steal(PyErr_NewExceptionWithDoc(
      "cannl.Error", "Base of every error cannl raises.", PyExc_Exception, nullptr));
  m.attr("Error") = error;
  auto user = nb::exception<UserError>(m, "UserError", error);
  user.attr("__doc__") = "A mistake the user can fix; the message says what, where and how.";
  user.attr("__module__") = "cannl";
  bind_error<InternalError>(m, "InternalError", error, "A bug in cannl itself (please report it).");
#define CANNL_BIND_ERROR(Name, doc) bind_error<Name>(m, #Name, user, doc)
  CANNL_BIND_ERROR(ShapeError, "Shape inference failed.");
  CANNL_BIND_ERROR(EinsumSyntaxError, "A malformed einsum spec.");
  CANNL_BIND_ERROR(ScheduleError, "An illegal schedule transform.");
  CANNL_BIND_ERROR(CompileError, "The system compiler rejected generated code.");
  CANNL_BIND_ERROR(BackendUnavailable, "A compiler, driver or device is missing.");
  CANNL_BIND_ERROR(FormatError, "A corrupt or lying file (safetensors, checkpoints, configs).");
  CANNL_BIND_ERROR(ConfigError, "A bad configuration value.");
  CANNL_BIND_ERROR(UninitializedError, "A routine or a read needs a node no one wrote.");
  CANNL_BIND_ERROR(RuntimeUsageError, "API misuse: wrong order, sizes or arguments.");
  CANNL_BIND_ERROR(IoError, "A file could not be read or written.");
  CANNL_BIND_ERROR(ResourceError, "The machine ran out of memory for a routine's scratch.");
  CANNL_BIND_ERROR(RuntimeError, "A device failed running work.");
  CANNL_BIND_ERROR(IndexRangeError, "A buffer or offset does not fit the index type.");
#undef CANNL_BIND_ERROR
  // For the tests of this translation: errors the Python API cannot provoke on a healthy machine
  // (a device fault, a cannl bug) are thrown here by name.
  m.def("_throw_cpp_error", [](const std::string& kind, const std::string& message) {
#define CANNL_THROW_IF(Name) \
  if (kind == #Name) throw Name(message);
    CANNL_THROW_IF(UserError) CANNL_THROW_IF(InternalError) CANNL_THROW_IF(ShapeError)
    CANNL_THROW_IF(EinsumSyntaxError) CANNL_THROW_IF(ScheduleError) CANNL_THROW_IF(CompileError)
    CANNL_THROW_IF(BackendUnavailable) CANNL_THROW_IF(FormatError) CANNL_THROW_IF(ConfigError)
    CANNL_THROW_IF(UninitializedError) CANNL_THROW_IF(RuntimeUsageError) CANNL_THROW_IF(IoError)
    CANNL_THROW_IF(ResourceError) CANNL_THROW_IF(RuntimeError) CANNL_THROW_IF(IndexRangeError)
#undef CANNL_THROW_IF
    throw std::invalid_argument("no cannl error class named " + kind);
  }, nb::arg("kind"), nb::arg("message"));
}

}  // namespace cannl::python
