"""cannl's errors: the classes of include/cannl/support/error.h, raised with the C++ messages.

    try:
        cannl.einsum("ij;jk=>", a, b)
    except cannl.EinsumSyntaxError as e:
        print(e)          # the spec with a caret under the mistake

cannl.Error is the base; UserError (a mistake the user can fix) and InternalError (a bug in cannl,
please report it) derive from it; every other class derives from UserError. The binding raises
the class whose name the C++ error's kind() gives (cannl._cannl looks them up here).
"""


class Error(Exception):
    """Base of every error cannl raises."""


class UserError(Error):
    """A mistake the user can fix; the message says what, where and how."""


class InternalError(Error):
    """A bug in cannl itself (please report it)."""


class ShapeError(UserError):
    """Shape inference failed."""


class EinsumSyntaxError(UserError):
    """A malformed einsum spec."""


class ScheduleError(UserError):
    """An illegal schedule transform."""


class CompileError(UserError):
    """The system compiler rejected generated code."""


class BackendUnavailable(UserError):
    """A compiler, driver or device is missing."""


class FormatError(UserError):
    """A corrupt or lying file (safetensors, checkpoints, configs)."""


class ConfigError(UserError):
    """A bad configuration value."""


class UninitializedError(UserError):
    """A routine or a read needs a node no one wrote."""


class RuntimeUsageError(UserError):
    """API misuse: wrong order, sizes or arguments."""


class IoError(UserError):
    """A file could not be read or written."""


class ResourceError(UserError):
    """The machine ran out of memory for a routine's scratch."""


class RuntimeError(UserError):  # noqa: A001  (cannl::RuntimeError; Python's stays builtins.RuntimeError)
    """A device failed running work."""


class IndexRangeError(UserError):
    """A buffer or offset does not fit the index type."""


__all__ = ["Error", "UserError", "InternalError", "ShapeError", "EinsumSyntaxError", "ScheduleError",
           "CompileError", "BackendUnavailable", "FormatError", "ConfigError", "UninitializedError",
           "RuntimeUsageError", "IoError", "ResourceError", "RuntimeError", "IndexRangeError"]

for _name in __all__:
    globals()[_name].__module__ = "cannl"   # tracebacks say cannl.ShapeError, as the API spells it
del _name
