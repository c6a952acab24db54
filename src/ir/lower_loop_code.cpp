// Lowering of loop code (a fused op written directly in the loop IR): its body as it is.
#include "cannl/support/error.h"
#include "lower_parts.h"

namespace cannl::ir::lowering {

void lower_loop_code(const LoopCode& code, std::vector<StmtRef>& out) {
  // The body's indices are logical; a padded node would need them shifted by its margins, which
  // no fused op has needed yet (their operands and results are never convolution inputs).
  for (const auto* nodes : {&code.reads, &code.writes})
    for (const auto& n : *nodes)
      if (n->is_padded())
        throw InternalError("lowering loop code " + code.label + ": node " + n->debug_name() +
                            " is padded");
  out.push_back(seq({comment(print_loop_code(code)), code.body}));
}

}  // namespace cannl::ir::lowering
