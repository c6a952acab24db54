#pragma once
// Which threads of a GPU kernel of one block hold a scalar local's value (private to
// src/schedule; kernel fission asks it before a statement using a local joins the kernel that
// set it). A GPU thread keeps its own copy of every local: a statement run on every thread
// (under no thread loop) leaves the value on every thread; one padded onto the first thread
// (under thread loops of one iteration) leaves it there only; one under a thread loop of more
// iterations (each thread its own steps) leaves each thread its own, which only reads in that
// loop's body may use (a per-iteration temporary). A read is sound when
// every thread making it ran every statement setting the local before it: in an earlier
// top-level statement of the kernel, or anywhere in its own (a loop may hold both).
//
//   v := 0; for i: { for j Workgroup: y[j] = x[i, j]; barrier; v := v + y[0] }   // every thread
//   for j Workgroup: z[j] = v * x[0, j]    // reads on every thread: sound
//   for j [0, 1) Workgroup: v := v + 1     // first thread only: a later read on all is not

#include <set>
#include <string>

#include "cannl/ir/kernel_geometry.h"
#include "cannl/ir/loop_ir.h"

namespace cannl::schedule::detail {

/// "" when every read of the locals `locals` in kernel `body` (one block, launch `g`) runs only
/// on threads that ran every statement of `body` setting that local before it (see above); else the first statement
/// that reads without the value, printed.
std::string first_read_without_its_local(const ir::StmtRef& body, const ir::KernelGeometry& g,
                                         const std::set<int>& locals);

}  // namespace cannl::schedule::detail
