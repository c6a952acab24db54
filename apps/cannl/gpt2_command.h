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
#include <string>
#include <vector>

namespace cannl::app {

/// Runs the command on `args` (after the word `gpt2`); returns the exit status. User errors
/// propagate as cannl::UserError (main prints them).
///   run_gpt2_command({"--weights", "model.safetensors", "--ids", "1,2", "--print-logits"}, out, err)
int run_gpt2_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace cannl::app
