#pragma once
// Zeroed, then written once: a ZeroOut of d followed by a nest that accumulates into every cell
// of d exactly once (d[idx] = f(d[idx], ...) with idx one-to-one over the nest's loops and as many
// iterations as d has cells) becomes that nest with d[idx] read as the zero it holds, and no
// ZeroOut: d[idx] = f(0, ...). The max-pool gradient is the common case (each input cell belongs
// to one window): the memset of its buffer and the read of every cell go. The same bits (the
// nest read +0 there); the simplifier then folds f(0, ...) by its own rules (0 + x -> x).
//
//   ir::LoweredRoutine r2 = assign_written_once(r);

#include "cannl/ir/loop_ir.h"

namespace cannl::opt {

/// `routine` with each top-level ZeroOut whose node the next statement touching it writes once
/// per cell folded into that statement (see above); unchanged nests and ZeroOuts otherwise.
ir::LoweredRoutine assign_written_once(const ir::LoweredRoutine& routine);

}  // namespace cannl::opt
