#pragma once
// Windowed reductions (pooling, and any accumulation whose short reduction loops the lowering
// puts innermost): for b, oh, ow, c: for kh, kw: d[b, oh, ow, c] = max(d[..], x[b, 2oh + kh, ..]).
// Every step of the window reads and writes d's cell through memory: a chain of store-to-load
// forwards per cell. Privatizing the cell over the window loops keeps it in a register, and the
// cells, independent of each other, pipeline; bitwise (the local rounds like the node). The
// gain on LeNet's max pool: benchmarks/reports/schedule-decisions.md.
//
//   if (auto p = plan_window_privatize(top, 64)) r = apply(r, *p);

#include <cstdint>
#include <optional>

#include "cannl/ir/loop_ir.h"
#include "cannl/schedule/transforms.h"

namespace cannl::schedule::detail {

/// The Privatize of the store's cell over the outermost of the trailing reduction loops (loops
/// the store's index does not mention) of the perfect nest under `top`, when they follow cell
/// loops, number at most `max_window` iterations together, and the store is a recognized
/// accumulation (add, mul, max, min) into its own cell; nullopt otherwise (longer reductions are left to the interleaved Split_reduce).
std::optional<Privatize> plan_window_privatize(const ir::For& top, std::int64_t max_window);

}  // namespace cannl::schedule::detail
