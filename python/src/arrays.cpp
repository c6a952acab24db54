// Values between contexts and host arrays: NumPy arrays and DLPack capsules out, any array with
// the buffer protocol or __dlpack__ (NumPy, PyTorch on the CPU, ...) in.
//
// Zero-copy where the memory allows: on a CPU context (cc, interpreter) a node without padding
// margins, of a dtype NumPy knows, is viewed in place (Context::host_storage); writing through
// the view changes what the next run reads, and the view keeps the context alive. Elsewhere (a
// GPU context, a padded node, bf16 / fp8 / u4x32) the values are copied, as float64 when NumPy
// has no such dtype.
//
//   view = ctx.numpy(w)        # zero-copy on cc
//   view[0, 0] = 1.5           # the next run sees it
//   np.from_dlpack(w)          # the same view through DLPack (w's context is remembered)
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <unordered_map>

#include "bindings.h"
#include "cannl/ir/tensor_node.h"
#include "cannl/support/error.h"
#include "cannl/support/float_codecs.h"
#include "cannl/tensor/autodiff.h"

namespace cannl::python {
namespace {

using HostArray = nb::ndarray<nb::ro, nb::device::cpu>;

// ---- which context holds a tensor's values ----

struct Remembered {
  std::weak_ptr<ir::TensorNode> node;  // guards against a reused address
  runtime::WeakContext ctx;
};

/// Keyed by the value node; read and written under the library lock.
std::unordered_map<const ir::TensorNode*, Remembered>& remembered() {
  static std::unordered_map<const ir::TensorNode*, Remembered> table;
  return table;
}

/// Drops records whose node or context is gone (amortized: when the table doubled).
void forget_dead_records() {
  static std::size_t next_sweep = 64;
  auto& table = remembered();
  if (table.size() < next_sweep) return;
  std::erase_if(table, [](const auto& entry) {
    return entry.second.node.expired() || !entry.second.ctx.lock();
  });
  next_sweep = std::max<std::size_t>(64, 2 * table.size());
}

runtime::Context context_of(const Tensor& t) {
  const auto found = remembered().find(t.value().get());
  if (found != remembered().end() && found->second.node.lock() == t.value())
    if (auto ctx = found->second.ctx.lock()) return *ctx;
  throw RuntimeUsageError("tensor '" + t.label() + "' has no values in any live context: compile a "
                          "routine that uses it (compile_step, compile_forward) or upload them "
                          "with ctx.set_values, or read them with ctx.numpy(tensor)");
}

// ---- dtypes ----

/// The DLPack dtype NumPy can view in place; nullopt for bf16, fp8 and u4x32.
std::optional<nb::dlpack::dtype> viewable_dtype(ir::DType t) {
  using Code = nb::dlpack::dtype_code;
  auto of = [](Code code, int bits) {
    return nb::dlpack::dtype{static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(bits), 1};
  };
  switch (t) {
    case ir::DType::F64: return of(Code::Float, 64);
    case ir::DType::F32: return of(Code::Float, 32);
    case ir::DType::F16: return of(Code::Float, 16);
    case ir::DType::I32: return of(Code::Int, 32);
    case ir::DType::I64: return of(Code::Int, 64);
    case ir::DType::U32: return of(Code::UInt, 32);
    case ir::DType::U64: return of(Code::UInt, 64);
    case ir::DType::U8: return of(Code::UInt, 8);
    default: return std::nullopt;
  }
}

/// One element of an array of any DLPack dtype, as a double.
double element_as_double(const std::byte* p, nb::dlpack::dtype dt) {
  using Code = nb::dlpack::dtype_code;
  auto load = [p]<typename T>(T) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return static_cast<double>(v);
  };
  const auto code = static_cast<Code>(dt.code);
  if (code == Code::Float && dt.bits == 64) return load(double{});
  if (code == Code::Float && dt.bits == 32) return load(float{});
  if (code == Code::Float && dt.bits == 16) {
    std::uint16_t bits;
    std::memcpy(&bits, p, 2);
    return f16_to_f32(bits);
  }
  if (code == Code::Bfloat && dt.bits == 16) {
    std::uint16_t bits;
    std::memcpy(&bits, p, 2);
    return bf16_to_f32(bits);
  }
  if (code == Code::Int && dt.bits == 8) return load(std::int8_t{});
  if (code == Code::Int && dt.bits == 16) return load(std::int16_t{});
  if (code == Code::Int && dt.bits == 32) return load(std::int32_t{});
  if (code == Code::Int && dt.bits == 64) return load(std::int64_t{});
  if ((code == Code::UInt || code == Code::Bool) && dt.bits == 8) return load(std::uint8_t{});
  if (code == Code::UInt && dt.bits == 16) return load(std::uint16_t{});
  if (code == Code::UInt && dt.bits == 32) return load(std::uint32_t{});
  if (code == Code::UInt && dt.bits == 64) return load(std::uint64_t{});
  throw RuntimeUsageError("arrays of DLPack type code " + std::to_string(dt.code) + " with " +
                          std::to_string(dt.bits) + " bits have no cannl value (use a float or "
                          "integer array)");
}

}  // namespace

/// The array's elements in row-major order, converted to double (any dtype, any strides).
std::vector<double> array_values(const HostArray& a) {
  const std::size_t n = a.size();
  std::vector<double> values(n);
  const auto* base = static_cast<const std::byte*>(a.data());
  const std::size_t item = (a.dtype().bits + 7) / 8;
  std::vector<std::size_t> index(a.ndim(), 0);
  for (std::size_t k = 0; k < n; ++k) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < a.ndim(); ++d) offset += static_cast<std::int64_t>(index[d]) * a.stride(d);
    values[k] = element_as_double(base + offset * static_cast<std::int64_t>(item), a.dtype());
    for (std::size_t d = a.ndim(); d-- > 0;) {
      if (++index[d] < a.shape(d)) break;
      index[d] = 0;
    }
  }
  return values;
}

std::vector<std::int64_t> array_dims(const HostArray& a) {
  std::vector<std::int64_t> dims;
  for (std::size_t d = 0; d < a.ndim(); ++d) dims.push_back(static_cast<std::int64_t>(a.shape(d)));
  return dims;
}

namespace {

bool is_c_contiguous(const HostArray& a) {
  std::int64_t expected = 1;
  for (std::size_t d = a.ndim(); d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != expected) return false;
    expected *= static_cast<std::int64_t>(a.shape(d));
  }
  return true;
}

/// Uploads an array into a node: one copy of the bytes when dtype and layout match, else
/// through doubles (converted to the node's dtype as set_values does).
void set_array(runtime::Context& ctx, const ir::NodeRef& node, const HostArray& a) {
  const auto dt = viewable_dtype(node->dtype);
  if (dt && a.dtype() == *dt && is_c_contiguous(a) &&
      static_cast<std::int64_t>(a.size()) == node->num_logical_elements()) {
    ctx.set_bytes(node, std::span(static_cast<const std::byte*>(a.data()), a.nbytes()));
    return;
  }
  const auto values = array_values(a);
  ctx.set_values(node, values);
}

template <typename... Framework>
nb::ndarray<Framework...> owned_copy(std::vector<double> values, const std::vector<std::int64_t>& dims) {
  auto* held = new std::vector<double>(std::move(values));
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  std::vector<std::size_t> shape(dims.begin(), dims.end());
  return nb::ndarray<Framework...>(held->data(), shape.size(), shape.data(), owner, nullptr,
                                   nb::dtype<double>(), nb::device::cpu::value);
}

/// The node's values as an array of Framework (nb::numpy, or none: a bare DLPack / buffer
/// object): in place when the memory allows, else a float64 copy.
template <typename... Framework>
nb::ndarray<Framework...> node_array(runtime::Context ctx, const ir::NodeRef& node) {
  if (!node) throw RuntimeUsageError("this tensor has no such node (no gradient?)");
  const auto dims = node->logical_dims();
  const auto dt = viewable_dtype(node->dtype);
  std::span<std::byte> cells = ctx.host_storage(node);
  if (cells.empty() || !dt) return owned_copy<Framework...>(ctx.get_values(node), dims);
  auto* held = new runtime::Context(std::move(ctx));
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<runtime::Context*>(p); });
  std::vector<std::size_t> shape(dims.begin(), dims.end());
  return nb::ndarray<Framework...>(cells.data(), shape.size(), shape.data(), owner, nullptr, *dt,
                                   nb::device::cpu::value);
}

bool viewable(runtime::Context& ctx, const ir::NodeRef& node) {
  return node && viewable_dtype(node->dtype) && !ctx.host_storage(node).empty();
}

/// Why t's values can only be copied out of ctx, for the errors of the zero-copy paths.
std::string not_viewable_reason(runtime::Context& ctx, const Tensor& t) {
  const std::string what = "tensor '" + t.label() + "' cannot be viewed without a copy: ";
  if (!viewable_dtype(t.value()->dtype))
    return what + "NumPy has no dtype " + std::string(ir::dtype_name(t.value()->dtype)) +
           " (t.numpy() gives a float64 copy)";
  return what + "its values are not in host memory of the " + std::string(ctx.backend_name()) +
         " context (t.numpy() gives a float64 copy)";
}

}  // namespace

void add_context_array_methods(nb::class_<runtime::Context>& c) {
  c.def("numpy", [](runtime::Context& ctx, const Tensor& t) {
         // Remembered only once read: a context that holds no values of t must not become t's.
         auto array = node_array<nb::numpy>(ctx, t.value());
         remember_context(t, ctx);
         return array;
       }, nb::arg("tensor"), kLocked,
       "The tensor's values as a NumPy array of its dtype: a writable view of the context's\n"
       "buffer on CPU contexts (writes are seen by the next run), else a float64 copy.")
      .def("numpy", [](runtime::Context& ctx, const ir::NodeRef& node) { return node_array<nb::numpy>(ctx, node); },
           nb::arg("node"), kLocked)
      .def("is_view", [](runtime::Context& ctx, const Tensor& t) { return viewable(ctx, t.value()); },
           nb::arg("tensor"), kLocked, "Whether numpy(tensor) is a zero-copy view here.")
      .def("set_values", [](runtime::Context& ctx, const Tensor& t, const HostArray& a) {
             set_array(ctx, t.value(), a);
             remember_context(t, ctx);
           }, nb::arg("tensor"), nb::arg("values"), kLocked,
           "Uploads values (any array: NumPy, a CPU torch tensor, anything with __dlpack__ or the\n"
           "buffer protocol), converted to the tensor's dtype; the element count must match.")
      .def("set_values", [](runtime::Context& ctx, const ir::NodeRef& node, const HostArray& a) {
             set_array(ctx, node, a);
           }, nb::arg("node"), nb::arg("values"), kLocked)
      .def("set_values", [](runtime::Context& ctx, const Tensor& t, const std::vector<double>& v) {
             ctx.set_values(t.value(), v);
             remember_context(t, ctx);
           }, nb::arg("tensor"), nb::arg("values"), kLocked)
      .def("get_values", [](runtime::Context& ctx, const Tensor& t) {
             return owned_copy<nb::numpy>(ctx.get_values(t.value()), t.value()->logical_dims());
           }, nb::arg("tensor"), kLocked, "A float64 copy of the tensor's values (C++ get_values).")
      .def("get_values", [](runtime::Context& ctx, const ir::NodeRef& node) {
             if (!node) throw RuntimeUsageError("get_values was given no node");
             return owned_copy<nb::numpy>(ctx.get_values(node), node->logical_dims());
           }, nb::arg("node"), kLocked)
      .def("grad", [](runtime::Context& ctx, const Tensor& t) {
             if (!t.grad()) throw RuntimeUsageError("tensor '" + t.label() + "' has no gradient");
             return node_array<nb::numpy>(ctx, t.grad());
           }, nb::arg("tensor"), kLocked, "The tensor's gradient after a training step (view or copy).");
}

void add_tensor_array_methods(nb::class_<Tensor>& c) {
  c
      .def("numpy", [](const Tensor& t) { return node_array<nb::numpy>(context_of(t), t.value()); },
           kLocked, "Values in the context that last compiled or uploaded this tensor (see Context.numpy).")
      .def("__array__", [](const Tensor& t, nb::handle dtype, nb::handle copy) {
             // NumPy 2's protocol: copy=False promises a view, so a copy is a ValueError.
             const bool must_view = !copy.is_none() && !nb::cast<bool>(copy);
             runtime::Context ctx = context_of(t);
             if (must_view && !viewable(ctx, t.value()))
               throw nb::value_error(not_viewable_reason(ctx, t).c_str());
             nb::object a = nb::cast(node_array<nb::numpy>(ctx, t.value()));
             if (!dtype.is_none()) a = a.attr("astype")(dtype, nb::arg("copy") = !must_view);
             if (!copy.is_none() && nb::cast<bool>(copy)) a = a.attr("copy")();
             return a;
           }, nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none(), kLocked)
      .def("__dlpack__", [](const Tensor& t, nb::kwargs kwargs) {
             // A bare ndarray (nanobind's DLPack exporter, versioned capsules included) over the
             // same memory; the capsule keeps the context alive.
             nb::object array = nb::cast(node_array<nb::array_api>(context_of(t), t.value()));
             return array.attr("__dlpack__")(**kwargs);
           }, kLocked, "DLPack export of the tensor's values (host memory; zero-copy on CPU contexts).")
      .def("__dlpack_device__", [](const Tensor&) { return nb::make_tuple(1, 0); },
           "(kDLCPU, 0): values are exported from host memory.");
}

namespace {

void bind_literals(nb::module_& m) {
  m.def("literal",
        [](const std::string& name, const HostArray& values, std::optional<std::vector<std::int64_t>> batch,
           std::optional<std::vector<std::int64_t>> input, std::optional<std::vector<std::int64_t>> output,
           std::optional<ir::DType> dtype) {
          if (!batch && !input && !output) output = array_dims(values);
          return literal(name, array_values(values), {batch, input, output, dtype});
        },
        nb::arg("name"), nb::arg("values"), nb::kw_only(), nb::arg("batch") = nb::none(),
        nb::arg("input") = nb::none(), nb::arg("output") = nb::none(), nb::arg("dtype") = nb::none(), kLocked,
        "Host data (copied) as a tensor. With no rows given, the array's axes are output axes:\n"
        "  x = cannl.literal(\"x\", data, batch=[16, 64], output=[2])");
  m.def("literal",
        [](const std::string& name, std::vector<double> values, std::optional<std::vector<std::int64_t>> batch,
           std::optional<std::vector<std::int64_t>> input, std::optional<std::vector<std::int64_t>> output,
           std::optional<ir::DType> dtype) {
          if (!batch && !input && !output) output = std::vector<std::int64_t>{static_cast<std::int64_t>(values.size())};
          return literal(name, std::move(values), {batch, input, output, dtype});
        },
        nb::arg("name"), nb::arg("values"), nb::kw_only(), nb::arg("batch") = nb::none(),
        nb::arg("input") = nb::none(), nb::arg("output") = nb::none(), nb::arg("dtype") = nb::none(), kLocked);
  m.def("from_dlpack",
        [](const HostArray& values, const std::string& name) {
          return literal(name, array_values(values), {.output = array_dims(values)});
        },
        nb::arg("x"), nb::arg("name") = "from_dlpack", kLocked,
        "A literal tensor (output axes = x's axes) from any DLPack or buffer-protocol array on\n"
        "the CPU. The values are copied: a literal owns its data.");
}

}  // namespace

void remember_context(const Tensor& t, const runtime::Context& ctx) {
  if (!t || !t.value()) return;
  forget_dead_records();
  remembered()[t.value().get()] = Remembered{t.value(), runtime::WeakContext(ctx)};
}

void remember_context_of_graph(const std::vector<Tensor>& roots, const runtime::Context& ctx) {
  for (const Tensor& t : topological_order(roots))
    if (ctx.has_buffer(t.value())) remember_context(t, ctx);
}

int tensor_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  // The buffer of the same view Tensor.numpy() gives (an nb_ndarray over the context's memory,
  // or over a copy): view->obj is that array, whose release ends the export.
  try {
    nb::object array;
    {
      Locked locked;
      const Tensor& t = nb::cast<const Tensor&>(nb::handle(self));
      runtime::Context ctx = context_of(t);
      // The buffer protocol exports memory, never a copy: NumPy tries it before __array__, so
      // exporting a copy here would break np.asarray(t, copy=False)'s promise of a view.
      if (!viewable(ctx, t.value())) throw RuntimeUsageError(not_viewable_reason(ctx, t));
      array = nb::cast(node_array<nb::array_api>(ctx, t.value()));
    }
    return PyObject_GetBuffer(array.ptr(), view, flags);
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
  }
  view->obj = nullptr;
  return -1;
}

void bind_arrays(nb::module_& m) { bind_literals(m); }

}  // namespace cannl::python
