#pragma once
// `cannl bench`: CPU throughput of the normal compile path.
//
//   cannl bench matmul --n 1024 [--threads 2] [--reps 10] [--tune]   last line: "GFLOP/s <x>"
//   cannl bench mlp [--threads 2] [--steps 20] [--tune]             last line: "step_ms <x>"
//   cannl tune matmul|mlp [the same options]                        bench <kind> --tune
//
// matmul times an N x N x N matmul routine (f32 buffers; the config keys `precision=tf32|bf16|f16`
// round its operands so, with f32 accumulation, and `backend=cuda|opencl` runs it on a GPU:
//   cannl bench matmul --n 4096 --backend cuda --precision bf16); mlp times one SGD training step of mlp_wide
// (256 -> 1024 -> 1024 -> 10, relu, batch 256, softmax cross-entropy; reference 10.2) on
// synthetic gaussian data. Compilation is excluded; the figure is the median of the timed runs
// after one warm-up run. --threads sets cc_threads (0: the OpenMP default). --tune compiles the
// timed routine with tune::tune instead, printing its report first (serial, default and tuned
// times of the search, the winner's trace); `cannl tune <kind>` is the same.

#include <iosfwd>
#include <string>

#include "options.h"

namespace cannl::app {

/// The options of `cannl bench matmul` and `cannl bench mlp` (for the parser and --help).
const CommandSpec& bench_matmul_spec();
const CommandSpec& bench_mlp_spec();
/// `cannl tune matmul|mlp`: the bench commands' options (their --tune implied).
const CommandSpec& tune_matmul_spec();
const CommandSpec& tune_mlp_spec();

/// Runs `cannl bench <which>` ("matmul" or "mlp"); user errors propagate as cannl::UserError.
///   run_bench_command("mlp", parse_command(bench_mlp_spec(), {"--steps", "5"}), out)
int run_bench_command(const std::string& which, const ParsedArgs& args, std::ostream& out);

}  // namespace cannl::app
