#pragma once
// The legality oracle of the schedule layer (semantics-backend.md 8.1, 8.3): a three-valued
// verdict over affine access relations, and the structural rules every annotated routine obeys.
//
//   auto v = parallel_legality(routine, i);   // treat loop i's index as the thread identity
//   if (v.legality == Legality::Legal) ...    // every pair of accesses to a written node is
//                                             // disjoint across iterations or in one iteration

#include <string>
#include <vector>

#include "cannl/ir/loop_ir.h"

namespace cannl::schedule {

/// Legal and Illegal are proofs; Unknown means the oracle could not decide (never a rejection by
/// itself: a transform rejects only proven conflicts, the default annotator needs proofs).
enum class Legality { Legal, Illegal, Unknown };
std::string_view legality_name(Legality legality);

struct LegalityVerdict {
  Legality legality = Legality::Unknown;
  std::string reason;         // for Illegal / Unknown: the access pair or statement
  bool reduction = false;     // Legal only because re-associating a recognized reduction is licensed
};

/// May the iterations of loop `axis` run in any order or at once? With `license_reduction`, a
/// recognized accumulation d[idx] = accum(d[idx], v) (idx free of the loop, accum add, mul, max or
/// min, d touched by nothing else in the loop) counts as legal (re-association licensed).
LegalityVerdict parallel_legality(const ir::LoweredRoutine& routine, ir::Symbol axis,
                                  bool license_reduction = false);

/// The structural rules of annotated code (8.1); throws ScheduleError naming the loop:
/// Grid / Workgroup / WorkgroupReduce loops start at 0, at most 3 nest per kind (Workgroup and
/// WorkgroupReduce share), none inside an inlined computation (local scope), no Barrier under
/// an If, and every non-Serial, non-Unrolled loop not proven Illegal by the oracle.
void validate_parallel(const ir::LoweredRoutine& routine);

}  // namespace cannl::schedule
