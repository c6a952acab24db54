#pragma once
// The optimizer's vocabulary: a pass is a pure function from a lowered routine to a lowered
// routine (STYLE.md: `verb_noun(routine, ctx)`), ordered only by src/opt/pipeline.cpp.
//
//   ir::LoweredRoutine r2 = simplify(r, ctx);

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cannl/ir/loop_ir.h"

namespace cannl::opt {

/// Settings of one optimization run, read from config once per compile.
///   PassContext ctx = PassContext::from_config("train_step");  ctx.max_visits == 1
struct PassContext {
  std::string routine_name;
  std::int64_t max_inline_reduction = 8;   // virtualize_max_inline_reduction
  int max_inline_fanin = 8;                // virtualize_max_inline_fanin
  int max_visits = 1;                      // virtualize_max_visits
  std::int64_t stack_threshold_bytes = 16384;  // stack_threshold_in_bytes (<= 0: no limit)
  /// Licence to contract `a + b*c` into one fused multiply-add (config fuse_multiply_add, on by
  /// default there): one rounding instead of two, the same bits on every backend and in the
  /// interpreter, but not bitwise the unoptimized program. Off in a default-constructed context.
  bool fuse_multiply_add = false;
  /// Nodes that must keep their context buffer whatever this routine does with them: the
  /// compilation lineage already holds them (earlier routines read or wrote them, the host
  /// uploaded them). Ids of nodes.
  std::set<int> persistent_nodes;
  /// Keep the routine after every pass in Optimized::passes (golden tests, tools).
  bool record_passes = false;
  /// Reads the keys above from config.
  static PassContext from_config(const std::string& routine_name);
};

/// Where a node lives after optimization.
enum class Placement { Virtual, Local, OnDevice };
/// placement_name(Placement::Local) == "local"
std::string_view placement_name(Placement p);

/// A placement decision with the code of who made it (readable in dumps). Provenance codes follow
/// semantics-backend.md 2.3 / 4.3 where it gives one (see src/opt/provenance.h for the table).
///   Decision{Placement::OnDevice, 37, "read-only input"}
struct Decision {
  Placement placement = Placement::OnDevice;
  int provenance = 0;
  std::string reason;
};

/// "on-device (37: read-only input)": how dumps and messages show a decision.
std::string describe_decision(const Decision& d);

/// The optimizer's output: the optimized routine and a decision for every node it touched.
struct Optimized {
  ir::LoweredRoutine routine;
  std::map<int, Decision> decisions;  // by node id
  /// With PassContext::record_passes: (pass name, routine after it), in pipeline order.
  std::vector<std::pair<std::string, ir::LoweredRoutine>> passes;
};

}  // namespace cannl::opt
