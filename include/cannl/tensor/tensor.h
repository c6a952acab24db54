#pragma once
// The Tensor handle: a node of the user's expression graph. Shapes are inferred from use; code is
// built lazily (at compile time, once shapes and projections are known).
//
//   Tensor w = param("w", {.output = {64}});
//   Tensor h = relu(w * x + param("b"));
//   Tensor loss = sum(h);

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cannl/ir/assignments.h"
#include "cannl/ir/dtype.h"
#include "cannl/shape/shape.h"
#include "cannl/tensor/precision_policy.h"

namespace cannl {

class Tensor;

/// Builds an operation's assignments once projections are known. `self` is the result.
using CodeBuilder =
    std::function<std::vector<ir::AsgnRef>(const Tensor& self, const ir::Projections& projections)>;

/// Parameter initialization (semantics-frontend.md 5.5). Values come from a counter-based
/// threefry stream keyed by the parameter's name and the `seed` config key.
enum class InitKind { Uniform, Normal, Kaiming, Xavier, Constant };

struct Init {
  InitKind kind = InitKind::Uniform;
  double low = -0.25, high = 0.25;  // Uniform
  double stddev = 1.0;              // Normal
  double scale_sq = 6.0;            // Kaiming / Xavier: uniform in +-sqrt(scale_sq / fan)
  double value = 0.0;               // Constant
};

struct TensorImpl {
  int id = 0;
  std::string label;
  ir::NodeRef value;
  ir::NodeRef grad;                 // null when not differentiable
  shape::ShapeRef shape;
  std::vector<Tensor> args;
  int step_id = -1;                 // shape update step (-1 for leaves built without one)
  CodeBuilder forward;              // null for leaves whose values come from the host
  /// Gradient contributions to args' grads (reads self.grad). Null when not differentiable.
  CodeBuilder backward;
  bool is_param = false;
  Init init;
  std::optional<ir::DType> specified_dtype;
  std::optional<ir::StaticSymbol> static_index;  // the runtime index of a batch slice
  bool top_down_dtype = false;      // constants take the precision of their consumers
  /// Sums of products (detail::sum_of_products): the precision their operands are rounded to
  /// (precision_policy.h); nullopt for every other tensor.
  std::optional<MatmulPrecision> matmul_precision;
  /// Host data of a literal (logical row-major values), uploaded when a routine is compiled.
  std::shared_ptr<const std::vector<double>> host_values;
  /// A literal that a training step adds 1 to after its last read (nn::uniform_at's count of
  /// steps done, so dropout draws fresh masks every step); train::compile_step finds these.
  bool step_counter = false;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  int id() const { return impl_->id; }
  const std::string& label() const { return impl_->label; }
  const ir::NodeRef& value() const { return impl_->value; }
  const ir::NodeRef& grad() const { return impl_->grad; }
  const shape::ShapeRef& shape() const { return impl_->shape; }
  const std::vector<Tensor>& args() const { return impl_->args; }
  bool requires_grad() const { return impl_->grad != nullptr; }
  bool is_param() const { return impl_->is_param; }
  TensorImpl& impl() const { return *impl_; }
  explicit operator bool() const { return impl_ != nullptr; }
  /// Logical dims in memory order (batch, output, input); finishes shape inference if needed.
  std::vector<std::int64_t> dims() const;
  /// "B|I->O" with solved sizes; finishes shape inference if needed.
  std::string shape_string() const;
  /// The shape as inferred so far, without finishing inference (unsolved axes print as `$N`, an
  /// open row as `..$N..`): printing a tensor mid-construction must not fix its open sizes.
  /// `<created before reset_tensor_state()>` for a tensor that may no longer be used.
  std::string partial_shape_string() const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

/// Options shared by leaves: the given rows (nullopt = inferred) and precision.
struct LeafOptions {
  std::optional<std::vector<std::int64_t>> batch, input, output;
  std::optional<ir::DType> dtype;
};

struct ParamOptions {
  std::optional<std::vector<std::int64_t>> input, output;
  Init init;
  std::optional<ir::DType> dtype;
};

// ---- leaves ----
/// A trainable parameter (no batch axes; unknown rows inferred from use).
Tensor param(const std::string& name, const ParamOptions& options = {});
/// A scalar constant that broadcasts anywhere.
Tensor constant(double value, std::optional<ir::DType> dtype = std::nullopt);
/// Host data (row-major logical values). Rows not given have no axes.
Tensor literal(const std::string& name, std::vector<double> values, const LeafOptions& options);
/// Output axis [n] holding 0, 1, ..., n-1.
Tensor range(std::int64_t n);

// ---- pointwise ----
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor pointmul(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);
Tensor neg(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor sin(const Tensor& a);
Tensor cos(const Tensor& a);
Tensor recip(const Tensor& a);
Tensor min(const Tensor& a, const Tensor& b);
Tensor max(const Tensor& a, const Tensor& b);
/// c != 0 ? a : b (no gradient flows to c).
Tensor where(const Tensor& c, const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
/// Identity forward, no gradient.
Tensor stop_gradient(const Tensor& a);
/// The values of `a` converted to `dtype` (round to nearest even when narrowing); the gradient
/// passes through, converted back (none through a cast to an integer dtype, which is piecewise
/// constant). The same tensor when `a` already has that dtype. Used to widen
/// the accumulator of a long f32 contraction:  cast(w * cast(x, ir::DType::F64), ir::DType::F32).
Tensor cast(const Tensor& a, ir::DType dtype);

// ---- contractions and reductions ----
/// Compose: contracts a's input axes with b's output axes (matrix multiplication).
Tensor operator*(const Tensor& a, const Tensor& b);
/// Swaps input and output rows.
Tensor transpose(const Tensor& a);
/// Binary einsum: sum of products, e.g. einsum("ij;jk=>ik", a, b).
Tensor einsum(const std::string& spec, const Tensor& a, const Tensor& b);
/// Unary einsum: permute / reduce (sum) / broadcast, e.g. einsum("...|...->i => ...|...->", x).
Tensor einsum(const std::string& spec, const Tensor& a);
/// Unary einsum with max accumulation.
Tensor einmax(const std::string& spec, const Tensor& a);
/// Binary einsum with max accumulation over products.
Tensor einmax(const std::string& spec, const Tensor& a, const Tensor& b);
/// Sum / mean / max of every element (a scalar).
Tensor sum(const Tensor& a);
Tensor mean(const Tensor& a);
Tensor max(const Tensor& a);
/// Sum / mean / max over the axes a unary spec reduces, e.g. sum(x, "...|...->c => ...|...->").
Tensor sum(const Tensor& a, const std::string& spec);
Tensor mean(const Tensor& a, const std::string& spec);
Tensor max(const Tensor& a, const std::string& spec);
/// Row `index` of the leftmost batch axis, chosen at run time by a static symbol.
Tensor slice_batch(const Tensor& a, const ir::StaticSymbol& index);

/// Resets shape inference (tests; programs building several models don't need it). Tensor ids
/// keep counting, so they stay unique across resets. Tensors built before the call may not be
/// used afterwards: building on them, reading their dims or compiling them throws
/// RuntimeUsageError "tensor 'y' was created before reset_tensor_state()".
void reset_tensor_state();

}  // namespace cannl
