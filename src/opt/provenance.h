#pragma once
// Provenance codes of placement decisions (private to src/opt). The numbers follow
// semantics-backend.md 2.3 / 4.3-4.6 where the reference gives one; cannl's own codes are >= 150.
// Dumps print them next to each decision so "why is this node stored?" has a one-line answer.
//
//   Decision{Placement::OnDevice, provenance::kReadOnly, "read-only input"}

namespace cannl::opt::provenance {

inline constexpr int kOptimizeOff = 0;        // config optimize=false: every node stored
inline constexpr int kVisitCap = 1;           // a cell is read more than virtualize_max_visits
inline constexpr int kDeclaredIntent = 3;     // TensorNode::mode asks for storage
inline constexpr int kIndexTuples = 4;        // writes/self-reads use more than one index tuple
inline constexpr int kEscapingSymbol = 7;     // the computation uses a symbol it does not bind
inline constexpr int kNoInlinableSetter = 12; // a write is not a loop nest around one store
inline constexpr int kInlined = 16;           // every read inlined; writes dropped
inline constexpr int kSurvivingRead = 17;     // a read could not be inlined: stored
inline constexpr int kRecurrent = 36;         // read before written: keeps state across runs
inline constexpr int kReadOnly = 37;          // only read here: an input
inline constexpr int kLineage = 38;           // the context already holds it (earlier routines)
inline constexpr int kReductionCap = 39;      // recompute cost over virtualize_max_inline_reduction
inline constexpr int kScalarConstexpr = 40;   // a scalar computed from constants
inline constexpr int kFaninCap = 41;          // inlining would read over virtualize_max_inline_fanin
inline constexpr int kHostInit = 49;          // carries host-init data uploaded at link time
inline constexpr int kPadded = 53;            // padded: its margins are state, not a computation
inline constexpr int kGuardedSetter = 142;    // written under an If guard
inline constexpr int kDynamicAccess = 143;    // read or written at a dynamic row
inline constexpr int kInputChanges = 144;    // something it reads is rewritten before a read
inline constexpr int kOutput = 153;           // written and never read here: a routine output
inline constexpr int kLocalBySize = 160;      // private to the routine, <= stack_threshold_in_bytes
inline constexpr int kOnDeviceBySize = 161;   // private to the routine, > stack_threshold_in_bytes

}  // namespace cannl::opt::provenance
