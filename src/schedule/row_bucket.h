#pragma once
// The guard of a bucketed scatter (BucketScatter, private to src/schedule): made by the
// transform, recognized by the legality oracle, so that one place says what the guard proves.
//
//   If (and(lt(first - 1, row), lt(row, first + width))) SetDynamic(node, row, ...)
//
// with `row` the scatter's own row value and the comparisons in f64 (the scatter converts its
// row to f64 too): an integer row passes only in [first, first + width), and a row that is not
// an integer selects no cell anyway, so the SetDynamic under it writes only rows of that range.

#include <cstdint>
#include <optional>

#include "cannl/ir/loop_ir.h"

namespace cannl::schedule::detail {

/// The rows a guard admits: [first, first + count) for integer rows.
struct RowRange {
  ir::AxisIndex first;
  std::int64_t count = 1;
};

/// The guard admitting the integer values of `row` in [first, first + width).
ir::ScalarRef row_bucket_guard(const ir::ScalarRef& row, const ir::AxisIndex& first, std::int64_t width);

/// The range `condition` confines `row` to when it has the form row_bucket_guard makes (the two
/// bounds differing by a constant, both comparisons reading a row structurally equal to `row`).
std::optional<RowRange> guarded_row_range(const ir::ScalarRef& condition, const ir::ScalarRef& row);

/// Structural equality of two scalars that read memory and indices only (Get, GetDynamic,
/// EmbedIndex, Apply, constants); false for locals and scopes unless the same object.
bool same_scalar(const ir::ScalarRef& a, const ir::ScalarRef& b);

}  // namespace cannl::schedule::detail
