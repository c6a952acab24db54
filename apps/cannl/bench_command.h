#pragma once
// `cannl bench`: CPU throughput of the normal compile path (issue 6).
//
//   cannl bench matmul --n 1024 [--threads 2] [--reps 10]   last line: "GFLOP/s <x>"
//   cannl bench mlp [--threads 2] [--steps 20]             last line: "step_ms <x>"
//
// matmul times an N x N x N f32 matmul routine; mlp times one SGD training step of mlp_wide
// (256 -> 1024 -> 1024 -> 10, relu, batch 256, softmax cross-entropy; reference 10.2) on
// synthetic gaussian data. Compilation is excluded; the figure is the median of the timed runs
// after one warm-up run. --threads sets cc_threads (0: the OpenMP default).

#include <iosfwd>
#include <string>
#include <vector>

namespace cannl::app {

/// Runs the command on `args` (after the word `bench`); returns the exit status. A user error
/// prints `error: <message>` on `err` and returns 1.
int run_bench_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace cannl::app
