// Tensor, leaves, pointwise ops, contractions and einsum ops (include/cannl/tensor/). Operators
// follow the C++ API: `*` composes (contracts a's input axes with b's output axes), `+ - /` and
// the named ops are pointwise with broadcasting, comparisons give 0/1 tensors.
//
//   w = cannl.param("w", output=[64], init=cannl.Init(kind=cannl.InitKind.Kaiming))
//   h = cannl.relu(w * x + cannl.param("b"))
#include <nanobind/operators.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "cannl/ir/dtype.h"
#include "cannl/ir/tensor_node.h"
#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/einsum_ops.h"

namespace cannl::python {
namespace {

using Dims = std::optional<std::vector<std::int64_t>>;

std::string tensor_repr(const Tensor& t) {
  const std::string kind = t.is_param() ? "param" : t.impl().host_values ? "literal" : "tensor";
  return "<cannl." + kind + " '" + t.label() + "' " + t.partial_shape_string() + " " +
         std::string(ir::dtype_name(t.value()->dtype)) + ">";
}

std::string node_repr(const ir::TensorNode& node) {
  std::string dims;
  for (auto d : node.logical_dims()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  return "<cannl.Node '" + node.debug_name() + "' " + std::string(ir::dtype_name(node.dtype)) +
         " [" + dims + "]>";
}

Tensor scalar(double v) { return constant(v); }

void bind_enums(nb::module_& m) {
  nb::enum_<ir::DType>(m, "DType", "Element precisions of tensor nodes.")
      .value("F64", ir::DType::F64).value("F32", ir::DType::F32).value("F16", ir::DType::F16)
      .value("BF16", ir::DType::BF16).value("FP8", ir::DType::FP8).value("I32", ir::DType::I32)
      .value("I64", ir::DType::I64).value("U32", ir::DType::U32).value("U64", ir::DType::U64)
      .value("U8", ir::DType::U8).value("U4x32", ir::DType::U4x32);
  nb::enum_<InitKind>(m, "InitKind", "How a parameter is initialized (threefry, keyed by its name).")
      .value("Uniform", InitKind::Uniform).value("Normal", InitKind::Normal)
      .value("Kaiming", InitKind::Kaiming).value("Xavier", InitKind::Xavier)
      .value("Constant", InitKind::Constant);
  nb::class_<Init>(m, "Init", "Parameter initialization: cannl.Init(kind=cannl.InitKind.Kaiming).")
      .def("__init__", [](Init* self, InitKind kind, double low, double high, double stddev,
                          double scale_sq, double value) {
             new (self) Init{kind, low, high, stddev, scale_sq, value};
           }, nb::arg("kind") = InitKind::Uniform, nb::arg("low") = -0.25, nb::arg("high") = 0.25,
           nb::arg("stddev") = 1.0, nb::arg("scale_sq") = 6.0, nb::arg("value") = 0.0)
      .def_rw("kind", &Init::kind).def_rw("low", &Init::low).def_rw("high", &Init::high)
      .def_rw("stddev", &Init::stddev).def_rw("scale_sq", &Init::scale_sq).def_rw("value", &Init::value);
  nb::class_<ir::StaticSymbol>(m, "StaticSymbol",
                               "An index bound at run time (the batch of a training step):\n"
                               "batch = cannl.StaticSymbol(16, \"batch\") takes values 0..15.")
      .def("__init__", [](ir::StaticSymbol* self, std::int64_t range, const std::string& name) {
             if (range < 0)
               throw RuntimeUsageError("StaticSymbol '" + name + "': range must be >= 0 (0: unknown), got " +
                                       std::to_string(range));
             new (self) ir::StaticSymbol{ir::fresh_symbol(), range, name};
           }, nb::arg("range"), nb::arg("name") = "index", kLocked)
      .def_ro("range", &ir::StaticSymbol::range)
      .def_ro("name", &ir::StaticSymbol::name)
      .def("__repr__", [](const ir::StaticSymbol& s) {
        return "<cannl.StaticSymbol '" + s.name + "' range " + std::to_string(s.range) + ">";
      });
}

void bind_node(nb::module_& m) {
  nb::class_<ir::TensorNode>(m, "Node",
                             "A buffer-backed node of the IR (a tensor's value or gradient, an\n"
                             "optimizer's state); contexts hold its values.")
      .def_prop_ro("label", [](const ir::TensorNode& n) { return n.debug_name(); })
      .def_prop_ro("dtype", [](const ir::TensorNode& n) { return n.dtype; })
      .def_prop_ro("dims", [](const ir::TensorNode& n) { return n.logical_dims(); },
                   "Logical dims (memory order).")
      .def("__repr__", &node_repr);
}

PyType_Slot tensor_slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(&tensor_getbuffer)}, {0, nullptr}};

void bind_tensor_class(nb::module_& m) {
  auto cls = nb::class_<Tensor>(m, "Tensor",
                     "A node of the expression graph. Shapes are inferred from use and printed\n"
                     "as cannl prints them, batch|input->output: `64|2->3`. Its values (in the\n"
                     "context that last compiled or uploaded it) support the buffer protocol,\n"
                     "__array__ and DLPack: memoryview(t), np.asarray(t), np.from_dlpack(t).\n"
                     "memoryview(t) and np.asarray(t, copy=False) only view, never copy: where the\n"
                     "values are not in host memory (a GPU context, a dtype NumPy lacks) they\n"
                     "raise BufferError / ValueError; np.asarray(t) and t.numpy() then copy.\n"
                     "repr(t) prints the shape inferred so far ($N: not yet known).",
                     nb::type_slots(tensor_slots))
      .def_prop_ro("id", &Tensor::id)
      .def_prop_ro("label", &Tensor::label)
      // Every property that reads the graph holds the library's lock, like the methods: shape
      // inference and node creation change process-wide state.
      .def_prop_ro("shape", &Tensor::shape_string, kLocked,
                   "The shape as cannl prints it, \"B|I->O\" (finishes shape inference).")
      .def_prop_ro("dims", &Tensor::dims, kLocked, "Logical dims in memory order: batch, output, input.")
      .def_prop_ro("dtype", [](const Tensor& t) { return t.value()->dtype; }, kLocked)
      .def_prop_ro("node", &Tensor::value, kLocked, "The value's node.")
      .def_prop_ro("grad_node", &Tensor::grad, kLocked, "The gradient's node (None when not differentiable).")
      .def_prop_ro("is_param", &Tensor::is_param, kLocked)
      .def_prop_ro("requires_grad", &Tensor::requires_grad, kLocked)
      .def_prop_ro("args", &Tensor::args, kLocked, "The operands this tensor was computed from.")
      // `a == b` builds an expression: as a condition it would always hold (`a in [b]`, `if a != b`).
      .def("__bool__", [](const Tensor&) -> bool {
             throw nb::type_error("the truth value of a cannl Tensor is ambiguous: it is an expression, "
                                  "not a value; compare values with t.numpy() or ctx.get_values(t)");
           })
      .def("__repr__", &tensor_repr, kLocked)
      .def("__hash__", [](const Tensor& t) { return t.id(); })
      // Composition and pointwise arithmetic, scalars broadcast as constants.
      .def("__mul__", [](const Tensor& a, const Tensor& b) { return a * b; }, kLocked, nb::is_operator())
      .def("__mul__", [](const Tensor& a, double b) { return b * a; }, kLocked, nb::is_operator())
      .def("__rmul__", [](const Tensor& a, double b) { return b * a; }, kLocked, nb::is_operator())
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return a * b; }, kLocked, nb::is_operator())
      .def("__add__", [](const Tensor& a, const Tensor& b) { return a + b; }, kLocked, nb::is_operator())
      .def("__add__", [](const Tensor& a, double b) { return a + b; }, kLocked, nb::is_operator())
      .def("__radd__", [](const Tensor& a, double b) { return a + b; }, kLocked, nb::is_operator())
      .def("__sub__", [](const Tensor& a, const Tensor& b) { return a - b; }, kLocked, nb::is_operator())
      .def("__sub__", [](const Tensor& a, double b) { return a - b; }, kLocked, nb::is_operator())
      .def("__rsub__", [](const Tensor& a, double b) { return b - a; }, kLocked, nb::is_operator())
      .def("__truediv__", [](const Tensor& a, const Tensor& b) { return a / b; }, kLocked, nb::is_operator())
      .def("__truediv__", [](const Tensor& a, double b) { return a / scalar(b); }, kLocked, nb::is_operator())
      .def("__rtruediv__", [](const Tensor& a, double b) { return scalar(b) / a; }, kLocked, nb::is_operator())
      .def("__neg__", [](const Tensor& a) { return -a; }, kLocked)
      .def("__pow__", [](const Tensor& a, double e) { return pow(a, e); }, kLocked, nb::is_operator())
      .def("__lt__", [](const Tensor& a, const Tensor& b) { return lt(a, b); }, kLocked, nb::is_operator())
      .def("__lt__", [](const Tensor& a, double b) { return lt(a, scalar(b)); }, kLocked, nb::is_operator())
      .def("__gt__", [](const Tensor& a, const Tensor& b) { return gt(a, b); }, kLocked, nb::is_operator())
      .def("__gt__", [](const Tensor& a, double b) { return gt(a, scalar(b)); }, kLocked, nb::is_operator())
      .def("__eq__", [](const Tensor& a, const Tensor& b) { return eq(a, b); }, kLocked, nb::is_operator())
      .def("__eq__", [](const Tensor& a, double b) { return eq(a, scalar(b)); }, kLocked, nb::is_operator())
      .def("__ne__", [](const Tensor& a, const Tensor& b) { return ne(a, b); }, kLocked, nb::is_operator())
      .def("__ne__", [](const Tensor& a, double b) { return ne(a, scalar(b)); }, kLocked, nb::is_operator())
      .def("transpose", [](const Tensor& a) { return transpose(a); }, kLocked,
           "Swaps the input and output rows.")
      .def_prop_ro("T", [](const Tensor& a) { return transpose(a); }, kLocked, "transpose()");
  add_tensor_array_methods(cls);
}

void bind_leaves(nb::module_& m) {
  m.def("param",
        [](const std::string& name, Dims input, Dims output, const Init& init,
           std::optional<ir::DType> dtype) {
          return param(name, {.input = std::move(input), .output = std::move(output), .init = init, .dtype = dtype});
        },
        nb::arg("name"), nb::kw_only(), nb::arg("input") = nb::none(), nb::arg("output") = nb::none(),
        nb::arg("init") = Init{}, nb::arg("dtype") = nb::none(), kLocked,
        "A trainable parameter (no batch axes; rows not given are inferred from use).\n"
        "  w = cannl.param(\"w\", output=[64], init=cannl.Init(kind=cannl.InitKind.Kaiming))");
  m.def("constant", [](double v, std::optional<ir::DType> dtype) { return constant(v, dtype); },
        nb::arg("value"), nb::arg("dtype") = nb::none(), kLocked,
        "A scalar constant that broadcasts anywhere.");
  m.def("range", &range, nb::arg("n"), kLocked, "Output axis [n] holding 0, 1, ..., n-1.");
  m.def("slice_batch", &slice_batch, nb::arg("a"), nb::arg("index"), kLocked,
        "Row `index` (a StaticSymbol) of the leftmost batch axis, chosen at run time.");
  m.def("reset_tensor_state", &reset_tensor_state, kLocked,
        "Resets shape inference (programs building several models need not); tensor ids keep counting. "
        "Tensors built before the call raise RuntimeUsageError when used afterwards.");
  m.def("params_of", [](const std::vector<Tensor>& roots) { return params_of(roots); },
        nb::arg("roots"), kLocked, "The parameters the roots depend on, in first-use order.");
  m.def("resolve_shapes", &resolve_shapes, nb::arg("roots"), kLocked,
        "Finishes shape inference of the roots' graphs.");
}

void bind_pointwise(nb::module_& m) {
  using Unary = Tensor (*)(const Tensor&);
  using Binary = Tensor (*)(const Tensor&, const Tensor&);
  m.def("neg", static_cast<Unary>(&neg), nb::arg("a"), kLocked);
  m.def("relu", static_cast<Unary>(&relu), nb::arg("a"), kLocked);
  m.def("tanh", static_cast<Unary>(&tanh), nb::arg("a"), kLocked);
  m.def("sigmoid", static_cast<Unary>(&sigmoid), nb::arg("a"), kLocked);
  m.def("exp", static_cast<Unary>(&exp), nb::arg("a"), kLocked);
  m.def("log", static_cast<Unary>(&log), nb::arg("a"), kLocked);
  m.def("sqrt", static_cast<Unary>(&sqrt), nb::arg("a"), kLocked);
  m.def("sin", static_cast<Unary>(&sin), nb::arg("a"), kLocked);
  m.def("cos", static_cast<Unary>(&cos), nb::arg("a"), kLocked);
  m.def("recip", static_cast<Unary>(&recip), nb::arg("a"), kLocked);
  m.def("stop_gradient", static_cast<Unary>(&stop_gradient), nb::arg("a"), kLocked,
        "Identity forward, no gradient.");
  m.def("pointmul", static_cast<Binary>(&pointmul), nb::arg("a"), nb::arg("b"), kLocked,
        "Pointwise product (`*` composes).");
  m.def("pow", [](const Tensor& a, double e) { return pow(a, e); }, nb::arg("a"), nb::arg("exponent"), kLocked);
  m.def("minimum", static_cast<Binary>(&min), nb::arg("a"), nb::arg("b"), kLocked, "Pointwise min (C++ min(a, b)).");
  m.def("maximum", static_cast<Binary>(&max), nb::arg("a"), nb::arg("b"), kLocked, "Pointwise max (C++ max(a, b)).");
  m.def("where", &where, nb::arg("c"), nb::arg("a"), nb::arg("b"), kLocked,
        "c != 0 ? a : b (no gradient flows to c).");
  m.def("lt", static_cast<Binary>(&lt), nb::arg("a"), nb::arg("b"), kLocked);
  m.def("gt", static_cast<Binary>(&gt), nb::arg("a"), nb::arg("b"), kLocked);
  m.def("eq", static_cast<Binary>(&eq), nb::arg("a"), nb::arg("b"), kLocked);
  m.def("ne", static_cast<Binary>(&ne), nb::arg("a"), nb::arg("b"), kLocked);
  m.def("cast", &cast, nb::arg("a"), nb::arg("dtype"), kLocked,
        "The values converted to dtype; the gradient passes through, converted back.");
}

void bind_reductions(nb::module_& m) {
  m.def("transpose", &transpose, nb::arg("a"), kLocked, "Swaps input and output rows.");
  m.def("sum", [](const Tensor& a, std::optional<std::string> spec) { return spec ? sum(a, *spec) : sum(a); },
        nb::arg("a"), nb::arg("spec") = nb::none(), kLocked,
        "Sum of every element, or over the axes a unary spec reduces:\n"
        "  cannl.sum(x, \"...|...->c => ...|...->\")");
  m.def("mean", [](const Tensor& a, std::optional<std::string> spec) { return spec ? mean(a, *spec) : mean(a); },
        nb::arg("a"), nb::arg("spec") = nb::none(), kLocked, "Mean of every element, or over a spec's axes.");
  m.def("max", [](const Tensor& a, std::optional<std::string> spec) { return spec ? max(a, *spec) : max(a); },
        nb::arg("a"), nb::arg("spec") = nb::none(), kLocked, "Max of every element, or over a spec's axes.");
  m.def("einsum", [](const std::string& spec, const Tensor& a) { return einsum(spec, a); },
        nb::arg("spec"), nb::arg("a"), kLocked);
  m.def("einsum", [](const std::string& spec, const Tensor& a, const Tensor& b) { return einsum(spec, a, b); },
        nb::arg("spec"), nb::arg("a"), nb::arg("b"), kLocked);
  m.def("einsum", [](const std::string& spec, const Tensor& a, const Tensor& b, const Tensor& c) {
          return einsum3(spec, a, b, c);
        }, nb::arg("spec"), nb::arg("a"), nb::arg("b"), nb::arg("c"), kLocked,
        "Einsum over one, two or three operands (sum of products):\n"
        "  cannl.einsum(\"ij;jk=>ik\", a, b)");
  m.def("einmax", [](const std::string& spec, const Tensor& a) { return einmax(spec, a); },
        nb::arg("spec"), nb::arg("a"), kLocked);
  m.def("einmax", [](const std::string& spec, const Tensor& a, const Tensor& b) { return einmax(spec, a, b); },
        nb::arg("spec"), nb::arg("a"), nb::arg("b"), kLocked, "Einsum with max accumulation.");
  m.def("einmin", &einmin, nb::arg("spec"), nb::arg("a"), kLocked, "Unary einsum with min accumulation.");
  m.def("tropical", &tropical, nb::arg("spec"), nb::arg("a"), nb::arg("b"), kLocked,
        "Max-plus einsum: max over the reduced labels of a + b.");
}

void bind_einsum_ops(nb::module_& m) {
  m.def("conv1d", [](const Tensor& x, const Tensor& k, std::int64_t stride, std::int64_t dilation, bool padding) {
          return conv1d(x, k, {stride, dilation, padding});
        }, nb::arg("x"), nb::arg("kernel"), nb::kw_only(), nb::arg("stride") = 1, nb::arg("dilation") = 1,
        nb::arg("padding") = false, kLocked, "1-D convolution: x batch|l,c; kernel k,c->f.");
  m.def("conv2d", [](const Tensor& x, const Tensor& k, std::int64_t stride, std::int64_t dilation, bool padding) {
          return conv2d(x, k, {stride, dilation, padding});
        }, nb::arg("x"), nb::arg("kernel"), nb::kw_only(), nb::arg("stride") = 1, nb::arg("dilation") = 1,
        nb::arg("padding") = false, kLocked, "2-D convolution: x batch|h,w,c; kernel kh,kw,c->f.");
  m.def("max_pool2d", &max_pool2d, nb::arg("x"), nb::arg("window"), nb::arg("stride") = 0, kLocked);
  m.def("avg_pool2d", &avg_pool2d, nb::arg("x"), nb::arg("window"), nb::arg("stride") = 0, kLocked);
  m.def("concat", [](const std::vector<Tensor>& parts, std::optional<std::string> spec) {
          return spec ? concat(*spec, parts) : concat(parts);
        }, nb::arg("parts"), nb::arg("spec") = nb::none(), kLocked,
        "Concatenation along the leftmost output axis, or by a block spec (\"a; b => a^b\").");
  m.def("stack", &stack, nb::arg("parts"), kLocked, "Stacks along a new leftmost output axis.");
  m.def("outer", &outer, nb::arg("a"), nb::arg("b"), kLocked);
  m.def("batched_matmul", &batched_matmul, nb::arg("a"), nb::arg("b"), kLocked);
  m.def("diagonal", &diagonal, nb::arg("m"), kLocked);
  m.def("trace", &trace, nb::arg("m"), kLocked);
}

}  // namespace

void bind_tensor(nb::module_& m) {
  bind_enums(m);
  bind_node(m);
  bind_tensor_class(m);
  bind_leaves(m);
  bind_pointwise(m);
  bind_reductions(m);
  bind_einsum_ops(m);
}

}  // namespace cannl::python
