#pragma once
// `cannl einsum [--eval] [--accum sum|max|min] SPEC SHAPE...`: infers the result shape of an
// einsum spec over concrete operand shapes and, with --eval, computes it over operands filled with
// their flat offsets (the command's output contract).
//
//   cannl einsum "ij;jk=>ik" 2,3 3,4          prints "2,4"
//   cannl einsum --eval "i => |->" 3          prints "" (a scalar) then "3"

#include <iosfwd>

#include "options.h"

namespace cannl::app {

/// The options of `cannl einsum` (for the parser and --help).
const CommandSpec& einsum_command_spec();

/// Runs the command; user errors propagate as cannl::UserError (main prints them, exit 1).
///   run_einsum_command(parse_command(einsum_command_spec(), {"ij;jk=>ik", "2,3", "3,4"}), out)
int run_einsum_command(const ParsedArgs& args, std::ostream& out);

}  // namespace cannl::app
