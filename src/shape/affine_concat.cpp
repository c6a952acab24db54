// Size relations of strided / convolution axes (semantics-frontend.md 2.7) and of concatenations
// (2.8). Each relation derives an unknown only when it is determined by the others and is kept
// as a residual otherwise, so solving always terminates (no guessing loops: `o<+k; k => o` closes).

#include "cannl/support/checked.h"
#include "cannl/support/error.h"
#include "shape/errors.h"
#include "shape/solver.h"

namespace cannl::shape {
namespace {

[[noreturn]] void affine_fail(const Constraint& k, SolveCtx& c, const std::string& what) {
  shape_fail(c.origin(), "solved dimensions for axis: " + what, &k.d1, &k.d2);
}

/// `size`, or a ShapeError naming the relation when computing it overflowed int64 (`what` says
/// which product: "stride 3 x output size 4611686018427387904").
std::int64_t size_or_fail(std::optional<std::int64_t> size, const Constraint& k, SolveCtx& c,
                          const std::string& what) {
  if (!size) affine_fail(k, c, "size overflow: " + what + " exceeds the 64-bit range");
  return *size;
}

std::string times(const char* a, std::int64_t x, const char* b, std::int64_t y) {
  return std::string(a) + " " + std::to_string(x) + " x " + b + " " + std::to_string(y);
}

/// Binds `d` to `size` with the derived `basis`, or checks a solved `d`. A derived basis is a
/// weaker claim than a written one: only two different named bases conflict.
void settle(const Dim& d, std::int64_t size, const Basis& basis, const Constraint& k, SolveCtx& c,
            const char* what) {
  if (size < 0) affine_fail(k, c, what);
  if (d.is_var()) return bind_dim(d.var, Dim::solved(size, basis));
  if (d.size != size) affine_fail(k, c, what + std::string(" (") + std::to_string(d.size) +
                                            " vs " + std::to_string(size) + ")");
  if (!merge_derived_basis(d.basis, basis))
    affine_fail(k, c, "different bases (" + dim_to_string(d) + " vs " + dim_to_string(Dim::solved(size, basis)) + ")");
}

/// The basis of a convolution axis derived from two solved axes (the output or input axis and
/// the kernel): a named basis wins; two different named bases are an error.
Basis conv_basis(const Dim& a, const Constraint& k, SolveCtx& c) {
  const Dim kernel = k.has_kernel ? subst(k.d3) : Dim::solved(0);
  if (kernel.is_var()) return *merge_derived_basis(a.basis, Basis{});
  auto merged = merge_derived_basis(a.basis, kernel.basis);
  if (!merged)
    shape_fail(c.origin(), "convolution: conflicting dimension bases between stride and kernel (" +
                               dim_to_string(a) + " vs kernel " + dim_to_string(kernel) + ")",
               &k.d1, &k.d2);
  return *merged;
}

/// Two stride-only (or padded) relations on one unknown axis, `in = s1*o1 = s2*o2` with both
/// outputs unknown: equal strides equate the outputs, a stride dividing the other relates them;
/// otherwise the strides are unresolvable (semantics 2.7). Returns whether `k` is implied by the
/// relation that replaces the pair (and need not be kept).
bool pair_strides(const Constraint& k, const Dim& in, const Dim& out, SolveCtx& c) {
  auto& s = state();
  auto it = s.watchers.find(in.var);
  if (it == s.watchers.end()) return false;
  for (const auto seq : std::vector<std::uint64_t>(it->second)) {
    auto p = s.pending.find(seq);
    if (p == s.pending.end()) continue;
    const Constraint& other = *p->second;
    if (&other == &k || other.kind != ConstraintKind::Affine || (other.has_kernel && !other.use_padding)) continue;
    const Dim other_in = subst(other.d1), other_out = subst(other.d2);
    if (!other_in.same_value(in) || !other_out.is_var()) continue;
    const std::int64_t s1 = k.stride, s2 = other.stride;
    if (s1 % s2 != 0 && s2 % s1 != 0)
      shape_fail(c.origin(), "solved dimensions for axis: unresolvable strides (" + std::to_string(s1) +
                                 "*" + dim_to_string(out) + " vs " + std::to_string(s2) + "*" +
                                 dim_to_string(other_out) + ": neither stride divides the other)",
                 &k.d1, &other.d1);
    if (s1 == s2) {
      unify_dim(out, other_out, c);
      return true;
    }
    const bool mine_larger = s1 > s2;
    Constraint scaled = make_dim(ConstraintKind::Affine, mine_larger ? other_out : out,
                                 mine_larger ? out : other_out, k.origin);
    scaled.stride = mine_larger ? s1 / s2 : s2 / s1;
    c.derive(std::move(scaled));
    if (mine_larger) return true;
    take_pending(seq);  // the other relation is implied by mine and the new one
    return false;
  }
  return false;
}

/// `in = stride*out` (stride only, or padded convolution: the kernel span does not count).
void solve_scaled(const Constraint& k, const Dim& in, const Dim& out, SolveCtx& c) {
  if (!out.is_var()) {
    const std::int64_t size = size_or_fail(checked_mul(k.stride, out.size), k, c,
                                           times("stride", k.stride, "output size", out.size));
    return settle(in, size, conv_basis(out, k, c), k, c, "mismatch");
  }
  if (in.is_var()) return pair_strides(k, in, out, c) ? void() : c.keep(k);
  if (in.size % k.stride != 0)
    affine_fail(k, c, "incompatible stride (" + std::to_string(in.size) + " is not a multiple of " +
                          std::to_string(k.stride) + ")");
  settle(out, in.size / k.stride, conv_basis(in, k, c), k, c, "mismatch");
}

/// `in = stride*(out-1) + span`, `span = 1 + (kernel-1)*dilation` (valid convolution).
void solve_valid(const Constraint& k, const Dim& in, const Dim& out, const Dim& ker, SolveCtx& c) {
  if (!ker.is_var()) {
    const std::int64_t span = size_or_fail(checked_mul_add(ker.size - 1, k.dilation, 1), k, c,
                                           times("kernel size", ker.size, "dilation", k.dilation));
    if (!out.is_var()) {
      const std::int64_t size = size_or_fail(checked_mul_add(k.stride, out.size - 1, span), k, c,
                                             times("stride", k.stride, "output size", out.size) +
                                                 " + kernel span " + std::to_string(span));
      return settle(in, size, conv_basis(out, k, c), k, c, "mismatch");
    }
    if (in.is_var()) return c.keep(k);
    if (in.size < span || (in.size - span) % k.stride != 0)
      affine_fail(k, c, "incompatible stride (input " + std::to_string(in.size) + ", kernel span " +
                            std::to_string(span) + ", stride " + std::to_string(k.stride) + ")");
    return settle(out, (in.size - span) / k.stride + 1, conv_basis(in, k, c), k, c, "mismatch");
  }
  if (in.is_var() || out.is_var()) return c.keep(k);
  const std::int64_t reach = size_or_fail(checked_mul(k.stride, out.size - 1), k, c,
                                          times("stride", k.stride, "output size", out.size));
  const std::int64_t span = in.size - reach;  // both in [0, 2^63): cannot overflow
  if (span < 1 || (span - 1) % k.dilation != 0)
    affine_fail(k, c, "cannot infer kernel dimension (input " + std::to_string(in.size) +
                          ", output " + std::to_string(out.size) + ")");
  settle(ker, (span - 1) / k.dilation + 1, Basis{}, k, c, "cannot infer kernel dimension");
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
  std::optional<Basis> basis = Basis{};  // of the solved parts: a named basis wins
  for (const auto& p0 : k.parts) {
    const Dim p = subst(p0);
    if (p.is_var()) {
      unknown.push_back(p);
      continue;
    }
    const auto sum = checked_add(known, p.size);
    if (!sum)
      shape_fail(c.origin(), "concat: size overflow: the parts' sizes add up past the 64-bit range (" +
                                 std::to_string(known) + " + " + std::to_string(p.size) + ")", &k.d1);
    known = *sum;
    const auto merged = merge_derived_basis(*basis, p.basis);
    if (!merged)
      shape_fail(c.origin(), "concat: conflicting dimension bases (" + basis->to_string() + " vs " +
                                 p.basis.to_string() + ")", &k.d1);
    basis = merged;
  }
  if (total.is_var()) {
    if (!unknown.empty()) return c.keep(k);
    return bind_dim(total.var, Dim::solved(known, *basis));
  }
  if (!merge_derived_basis(total.basis, *basis))
    shape_fail(c.origin(), "concat: conflicting dimension bases (" + dim_to_string(total) +
                               " is the concatenation of " + basis->to_string() + " parts)", &k.d1);
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
  bind_dim(unknown[0].var, Dim::solved(total.size - known, *merge_derived_basis(total.basis, Basis{})));
}

}  // namespace cannl::shape
