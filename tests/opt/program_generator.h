#pragma once
// Random programs for differential testing of the optimizer: small loop nests of accumulating
// assignments with broadcasts, reductions (add, max), fixed indices, size-1 axes, one-hot
// selections (gathers) and their transposes (scatters), several writers of one node (store then accumulate, partial rows) and chains of
// pointwise ops that invite inlining.
//
//   GeneratedProgram p = generate_program(/*seed=*/7);
//   // run p.comp optimized and with optimize=false, compare p.outputs

#include <cstdint>
#include <string>
#include <vector>

#include "cannl/ir/assignments.h"

namespace cannl::opt::testing {

struct GeneratedProgram {
  ir::Comp comp;
  std::vector<ir::NodeRef> inputs;         // upload inputs_values[k] into inputs[k]
  std::vector<std::vector<double>> input_values;
  std::vector<ir::NodeRef> outputs;        // marked Materialized: compared after a run
  /// True when a rewrite may legally re-associate floating-point operations (compare with a
  /// tolerance); generated programs use only ops whose results the optimizer keeps bitwise.
  bool reassociation_licensed = false;
};

/// A deterministic random program for `seed`; node labels are prefixed with `prefix` so several
/// programs can share one routine.
GeneratedProgram generate_program(std::uint64_t seed, const std::string& prefix = "");

/// Several programs concatenated into one computation (their nodes are disjoint): one compile
/// of the C backend then checks all of them.
GeneratedProgram concatenate(const std::vector<GeneratedProgram>& programs);

}  // namespace cannl::opt::testing
