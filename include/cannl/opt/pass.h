#pragma once
// The optimizer's vocabulary: a pass is a pure function from a lowered routine to a lowered
// routine (STYLE.md: `verb_noun(routine, ctx)`), ordered only by src/opt/pipeline.cpp.
//
//   ir::LoweredRoutine r2 = simplify(r, ctx);

#include <map>
#include <string>

#include "cannl/ir/loop_ir.h"

namespace cannl::opt {

/// Settings of one optimization run, read from config once per compile.
struct PassContext {
  std::string routine_name;
  std::int64_t max_inline_reduction = 16;  // virtualize_max_inline_reduction
  int max_inline_fanin = 8;                // virtualize_max_inline_fanin
  int max_visits = 1;                      // virtualize_max_visits
  std::int64_t stack_threshold_bytes = 16384;
  /// Reads the keys above from config.
  static PassContext from_config(const std::string& routine_name);
};

/// Where a node lives after optimization.
enum class Placement { Virtual, Local, OnDevice };
std::string_view placement_name(Placement p);

/// A placement decision with the code of who made it (readable in dumps).
struct Decision {
  Placement placement = Placement::OnDevice;
  int provenance = 0;
  std::string reason;
};

/// The optimizer's output: the optimized routine and a decision for every node it touched.
struct Optimized {
  ir::LoweredRoutine routine;
  std::map<int, Decision> decisions;  // by node id
};

}  // namespace cannl::opt
