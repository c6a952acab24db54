#pragma once
// `cannl gpt2`: GPT-2 inference from a Hugging Face safetensors checkpoint.
//
//   cannl gpt2 --weights FILE [--config FILE] [--prompt TEXT | --ids N,N,...] [--tokens N]
//              [--print-logits] [--top-k K] [--temperature T] [--seed S]
//   cannl gpt2 --random-weights [--config FILE] --ids 464,3290 --tokens 8   (a timed dry run)
//
// With --print-logits the logits of the prompt's last position are printed, one per line, and
// nothing is generated. Otherwise the prompt is continued by --tokens tokens (greedy unless --top-k
// or --temperature is given), printed as `tokens: a,b,c` and, for a text prompt, `text: ...`.
// Timings go to stderr (`gpt2: ... ms per token`) so stdout is reproducible.

#include <iosfwd>

#include "options.h"

namespace cannl::app {

/// The options of `cannl gpt2` (for the parser and --help).
const CommandSpec& gpt2_command_spec();

/// Runs the command; user errors propagate as cannl::UserError (main prints them).
///   run_gpt2_command(parse_command(gpt2_command_spec(), {"--weights", "m.safetensors", "--ids", "1,2"}), out, err)
int run_gpt2_command(const ParsedArgs& args, std::ostream& out, std::ostream& err);

}  // namespace cannl::app
