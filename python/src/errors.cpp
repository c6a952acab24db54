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

/// The Python class cannl.errors.<name> (the classes are Python code, so type checkers and the
/// generated stubs see them); an invalid object when there is no such class.
nb::object error_class(const char* name) {
  try {
    return nb::module_::import_("cannl.errors").attr(name);
  } catch (const nb::python_error&) {
    return {};
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  // One translator: a UserError's kind() names its class (ShapeError, ...), so a class added to
  // error.h needs only its line in cannl/errors.py.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const UserError& e) {
      nb::object cls = error_class(e.kind());
      if (!cls.is_valid()) cls = error_class("UserError");
      PyErr_SetString(cls.is_valid() ? cls.ptr() : PyExc_RuntimeError, e.what());
    } catch (const InternalError& e) {
      nb::object cls = error_class("InternalError");
      PyErr_SetString(cls.is_valid() ? cls.ptr() : PyExc_RuntimeError, e.what());
    }
  });
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
