#pragma once
// Pattern matching of the one-hot rewrite (private to src/opt, used by one_hot.cpp): a
// contribution `(k == e) * x`, `x * (k == e)` or `Where(k == e, x, 0)` of a reduction over loop
// `k`, where the selector compares exactly: every k of the loop converts exactly to the
// comparison's dtype, so (k == e) holds for exactly the k equal to e converted to that dtype.
//
//   auto m = match_one_hot(contribution, k, 0, 50257);
//   if (m) { m->row (e converted), m->other (x), m->dtype (the product's dtype) }

#include <cstdint>
#include <functional>
#include <optional>

#include "cannl/ir/loop_ir.h"

namespace cannl::opt {

/// A matched one-hot contribution.
struct OneHotMatch {
  ir::ScalarRef row;    // e converted to the comparison's dtype: the only k that contributes
  ir::ScalarRef other;  // x, the factor the selector picks
  ir::DType dtype = ir::DType::F32;  // dtype of the contribution (the Mul / Where)
};

/// The value a read stands for when it reads a materialized one-hot selector node (see
/// SelectorProducers in one_hot.cpp), else nullopt.
using SelectorSource = std::function<std::optional<ir::ScalarRef>(const ir::Get&)>;

/// Matches a contribution of a reduction over `k` in [begin, end); `row` is free of k.
///   match_one_hot(mul((k == ids[p]), t[k, d]), k, 0, 4)->row == ids[p] (in the compare dtype)
std::optional<OneHotMatch> match_one_hot(const ir::ScalarRef& contribution, ir::Symbol k,
                                         std::int64_t begin, std::int64_t end,
                                         const SelectorSource& source = {});

/// The row e of a selector `(k' == e)` over counter `k'` (possibly converted), when `value` is
/// one and k' converts exactly for every k' in [0, end): the test a materialized one-hot
/// producer must pass.   selector_of(eq(identity(index(k)), ids[p]), k, 6) == ids[p]
std::optional<ir::ScalarRef> selector_of(const ir::ScalarRef& value, ir::Symbol k, std::int64_t end);

/// `s` converted to `dtype` (itself when it already has that dtype).
///   converted(get(ids, {i}), F32)  is  identity<f32>(ids[i]) for i64 ids
ir::ScalarRef converted(const ir::ScalarRef& s, ir::DType dtype);

/// True when a scalar mentions symbol `k` anywhere (indices, nested scopes).
bool mentions(const ir::ScalarRef& s, ir::Symbol k);

/// The axis of `index` that is exactly `k` when no other axis mentions k, else nullopt.
///   sole_axis_of({i, k}, k) == 1;  sole_axis_of({k, k}, k) == nullopt
std::optional<int> sole_axis_of(const std::vector<ir::AxisIndex>& index, ir::Symbol k);

}  // namespace cannl::opt
