#pragma once
// What the default schedules (CPU and GPU) ask of a loop before they annotate it (private to
// src/schedule): how much work it shares out and whether its iterations are provably
// independent.
//
//   if (provably_parallel(r, *f) && work_of(stmt) >= min_parallel) ... Retype{f->index, Grid}

#include <cstdint>

#include "cannl/ir/loop_ir.h"

namespace cannl::schedule::detail {

/// Iterations of the leaves of a statement (the work a parallel loop over it would share out):
/// loops multiply, sequences add, a tile counts its multiply-adds.
std::int64_t work_of(const ir::StmtRef& s);

/// A Serial loop starting at 0 with at least `min_extent` iterations that the legality oracle
/// proves Legal without a reduction licence (so annotating it keeps every bit of the results).
bool provably_parallel(const ir::LoweredRoutine& routine, const ir::For& f, std::int64_t min_extent = 2);

/// Whether loop `s` chooses the runtime row of a scatter (a SetDynamic's row value mentions
/// it): such a loop stays serial (semantics-backend.md 8.3, dynamic components masked), since
/// the rows it picks may repeat and a scatter accumulates them in program order.
bool drives_dynamic_write(const ir::StmtRef& body, ir::Symbol s);

}  // namespace cannl::schedule::detail
