// Size relations of strided / convolution axes (semantics-frontend.md 2.7) and of concatenations
// (2.8). Each relation derives an unknown only when it is determined by the others and is kept
// as a residual otherwise, so solving always terminates (no guessing loops: `o<+k; k => o` closes).

#include "cannl/support/error.h"
#include "shape/errors.h"
#include "shape/solver.h"

namespace cannl::shape {
namespace {

[[noreturn]] void affine_fail(const Constraint& k, SolveCtx& c, const std::string& what) {
  shape_fail(c.origin(), "solved dimensions for axis: " + what, &k.d1, &k.d2);
}

/// Binds `d` to `size` (default basis) or checks it; the basis of a solved axis is kept.
void settle(const Dim& d, std::int64_t size, const Constraint& k, SolveCtx& c, const char* what) {
  if (size < 0) affine_fail(k, c, what);
  if (d.is_var()) return bind_dim(d.var, Dim::solved(size));
  if (d.size != size) affine_fail(k, c, what + std::string(" (") + std::to_string(d.size) +
                                            " vs " + std::to_string(size) + ")");
}

/// `in = stride*out` (stride only, or padded convolution: the kernel span does not count).
void solve_scaled(const Constraint& k, const Dim& in, const Dim& out, SolveCtx& c) {
  if (!out.is_var()) return settle(in, k.stride * out.size, k, c, "mismatch");
  if (in.is_var()) return c.keep(k);
  if (in.size % k.stride != 0)
    affine_fail(k, c, "incompatible stride (" + std::to_string(in.size) + " is not a multiple of " +
                          std::to_string(k.stride) + ")");
  settle(out, in.size / k.stride, k, c, "mismatch");
}

/// `in = stride*(out-1) + span`, `span = 1 + (kernel-1)*dilation` (valid convolution).
void solve_valid(const Constraint& k, const Dim& in, const Dim& out, const Dim& ker, SolveCtx& c) {
  if (!ker.is_var()) {
    const std::int64_t span = 1 + (ker.size - 1) * k.dilation;
    if (!out.is_var()) return settle(in, k.stride * (out.size - 1) + span, k, c, "mismatch");
    if (in.is_var()) return c.keep(k);
    if (in.size < span || (in.size - span) % k.stride != 0)
      affine_fail(k, c, "incompatible stride (input " + std::to_string(in.size) + ", kernel span " +
                            std::to_string(span) + ", stride " + std::to_string(k.stride) + ")");
    return settle(out, (in.size - span) / k.stride + 1, k, c, "mismatch");
  }
  if (in.is_var() || out.is_var()) return c.keep(k);
  const std::int64_t span = in.size - k.stride * (out.size - 1);
  if (span < 1 || (span - 1) % k.dilation != 0)
    affine_fail(k, c, "cannot infer kernel dimension (input " + std::to_string(in.size) +
                          ", output " + std::to_string(out.size) + ")");
  settle(ker, (span - 1) / k.dilation + 1, k, c, "cannot infer kernel dimension");
}

}  // namespace

void solve_affine(const Constraint& k, SolveCtx& c) {
  const Dim in = subst(k.d1), out = subst(k.d2);
  if (!k.has_kernel || k.use_padding) return solve_scaled(k, in, out, c);
  solve_valid(k, in, out, subst(k.d3), c);
}

void solve_concat(const Constraint& k, SolveCtx& c) {
  const Dim total = subst(k.d1);
  std::int64_t known = 0;
  std::vector<Dim> unknown;
  for (const auto& p0 : k.parts) {
    const Dim p = subst(p0);
    if (p.is_var()) unknown.push_back(p);
    else known += p.size;
  }
  if (total.is_var()) {
    if (!unknown.empty()) return c.keep(k);
    return bind_dim(total.var, Dim::solved(known));
  }
  if (known > total.size)
    shape_fail(c.origin(), "concat: components exceed the concatenated size (" +
                               std::to_string(known) + " > " + std::to_string(total.size) + ")",
               &k.d1);
  if (unknown.empty()) {
    if (known != total.size)
      shape_fail(c.origin(), "solved dimensions for axis: mismatch (concatenation of size " +
                                 std::to_string(known) + " vs " + std::to_string(total.size) + ")",
                 &k.d1);
    return;
  }
  if (unknown.size() > 1) return c.keep(k);
  bind_dim(unknown[0].var, Dim::solved(total.size - known));
}

}  // namespace cannl::shape
