#pragma once
// Operations built on the extended einsum notation (semantics-frontend.md 2.7-2.9): convolutions,
// pooling, concatenation and stacking, outer products, batched matmul, diagonal, trace, tropical
// (max-plus), three-operand einsum and min accumulation. Each has its gradient rule.
//
//   Tensor y = conv2d(x, w, {.stride = 2, .padding = true});   // x: b|h,w,c  w: kh,kw,c -> f
//   Tensor z = concat({a, b});                                // along the leftmost output axis

#include <cstdint>
#include <string>
#include <vector>

#include "cannl/shape/shape.h"
#include "cannl/tensor/tensor.h"

namespace cannl {

/// Convolution options: `padding` = true keeps size/stride outputs (`o=+k`), false is a valid
/// convolution (`o<+k`).
struct ConvOptions {
  std::int64_t stride = 1;
  std::int64_t dilation = 1;
  bool padding = false;
};

/// 1-D convolution: x `batch|l, c`, kernel `k, c -> f` (a parameter: input k,c, output f);
/// result `batch|o, f`. `conv1d(x, param("w", {.input = {{3, 2}}, .output = {{4}}}))`.
Tensor conv1d(const Tensor& x, const Tensor& kernel, const ConvOptions& options = {});
/// 2-D convolution: x `batch|h, w, c`, kernel `kh, kw, c -> f`; result `batch|oh, ow, f`.
Tensor conv2d(const Tensor& x, const Tensor& kernel, const ConvOptions& options = {});

/// Max pooling over `window` x `window` cells of x `batch|h, w, c` with the given stride
/// (default: the window), unpadded. `max_pool2d(x, 2)` halves h and w.
Tensor max_pool2d(const Tensor& x, std::int64_t window, std::int64_t stride = 0);
/// Average pooling, same geometry as max_pool2d.
Tensor avg_pool2d(const Tensor& x, std::int64_t window, std::int64_t stride = 0);

/// Concatenation along the leftmost output axis (`a0^a1^...`); gradients scatter back.
/// `concat({x, y})` with x: 2,3 and y: 4,3 gives 6,3.
Tensor concat(const std::vector<Tensor>& parts);
/// A general concatenation / block spec over n operands, e.g. `concat("a; b => a^b", {x, y})`,
/// `concat("1^i => i", {x})` (shift), `concat("i => 1^i", {x})` (pad with 0).
Tensor concat(const std::string& spec, const std::vector<Tensor>& parts);
/// Stacks equally shaped tensors along a new leftmost output axis: `stack({x, y})` 2,...
Tensor stack(const std::vector<Tensor>& parts);

/// Outer product of the output rows of two vectors: `outer(x, y)` i,j = x[i]*y[j].
Tensor outer(const Tensor& a, const Tensor& b);
/// Matrix product over the last two output axes, batched over the batch row and any leading
/// output axes: a `batch|..b.., i, j`, b `batch|..b.., j, k` => `batch|..b.., i, k`.
Tensor batched_matmul(const Tensor& a, const Tensor& b);
/// Diagonal of a square output matrix: `diagonal(m)` i = m[i, i].
Tensor diagonal(const Tensor& m);
/// Trace of a square output matrix (a scalar per batch).
Tensor trace(const Tensor& m);

/// Max-plus einsum: max over the reduced labels of a + b (`tropical("ij;jk=>ik", a, b)`).
Tensor tropical(const std::string& spec, const Tensor& a, const Tensor& b);
/// Three-operand einsum: sum of a*b*c (`einsum3("ij;jk;kl=>il", a, b, c)`).
Tensor einsum3(const std::string& spec, const Tensor& a, const Tensor& b, const Tensor& c);
/// Einsum with captured dimensions (semantics-frontend.md 2.12): each capture names a label or a
/// `..row..` variable of the spec; read it with `shape::solved_dim` (fix it with `shape::set_dim`).
///   auto j = shape::capture("j");
///   Tensor c = einsum("ij;jk=>ik", a, b, {j});   shape::solved_dim(j) == a's second axis
Tensor einsum(const std::string& spec, const Tensor& a, const Tensor& b,
              std::vector<shape::VariableRef> captures);
/// Unary einsum with captured dimensions: `einsum("...|..v.. => ...|", x, {v})`.
Tensor einsum(const std::string& spec, const Tensor& a, std::vector<shape::VariableRef> captures);
/// Unary einsum with min accumulation: `einmin("ij=>i", x)` row minima.
Tensor einmin(const std::string& spec, const Tensor& a);

}  // namespace cannl
