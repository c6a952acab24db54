#pragma once
// `cannl einsum [--eval] [--accum sum|max|min] SPEC SHAPE...`: infers the result shape of an
// einsum spec over concrete operand shapes and, with --eval, computes it over operands filled with
// their flat offsets (issue 4's contract).
//
//   cannl einsum "ij;jk=>ik" 2,3 3,4          prints "2,4"
//   cannl einsum --eval "i => |->" 3          prints "" (a scalar) then "3"

#include <iosfwd>
#include <string>
#include <vector>

namespace cannl::app {

/// Runs the command on `args` (after the word `einsum`); returns the exit status. A user error
/// prints `error: <message>` on `err` and returns 1.
int run_einsum_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace cannl::app
