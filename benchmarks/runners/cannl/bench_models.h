#pragma once
// The benchmark workloads as cannl programs, built from a fixture (weights, data and
// hyperparameters; layout in benchmarks/scripts/gen_fixtures.py) and run on one context.
//
//   BenchCell cell(workload, io::SafetensorsFile::open(path), runtime::Context::cpu());
//   cell.compile();  cell.step(0);  double loss = cell.loss();

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench_harness.h"
#include "cannl/io/safetensors.h"
#include "cannl/nn/training.h"
#include "cannl/runtime/context.h"
#include "cannl/tensor/precision_policy.h"
#include "cannl/tensor/tensor.h"
#include "cannl/tune/tune.h"

namespace cannl::bench {

/// A workload's loss graph: the loss of the batch chosen by `batch`, and each parameter with the
/// fixture tensor that initializes it.
struct LossGraph {
  Tensor loss;
  ir::StaticSymbol batch;
  std::vector<std::pair<std::string, Tensor>> params;
};

/// mlp: dims [in, h..., classes], relu between layers; conv: valid convs with bias, relu and
/// max pooling, then fully connected layers; gpt: pre-LN GPT-2 decoder (nn::Gpt2Blocks). The
/// loss is the mean softmax cross-entropy against one-hot labels (targets for gpt).
LossGraph build_loss_graph(const Workload& w, const io::SafetensorsFile& fixture);

/// The workload's "precision" (f32 when absent; bf16, f16, tf32: the matmul policy of
/// cannl/tensor/precision_policy.h, f32 accumulation and f32 master weights).
PrecisionPolicy workload_precision(const Workload& w);

/// One benchmark cell: compile (a training step with the workload's optimizer, plain SGD or
/// AdamW, or a forward routine for inference workloads), then steps over the fixture's batches.
class BenchCell {
 public:
  /// `tune`: the step (or forward) routine is compiled by the tuner (tune::tune, the autotune_*
  /// config keys) instead of the default schedule.
  BenchCell(Workload workload, io::SafetensorsFile fixture, runtime::Context ctx, bool tune = false);
  /// Builds the graph, compiles its routines and uploads the fixture's weights.
  void compile();
  /// Runs step k on batch k mod n_batches.
  void step(std::int64_t k);
  /// The loss of the last step (computed before that step's update); waits for the device.
  double loss() const;
  /// The context the cell runs on (for its kernel profile).
  const runtime::Context& context() const { return ctx_; }
  /// From now on compile() keeps the step's (or forward's) routine as optimized, before any
  /// schedule (what bench_cannl --census schedules for a GPU), and compiles an empty routine in
  /// its place: the cell then only serves the census (no buffers for the step's intermediates,
  /// which for GPT-2 124M exceed a host's memory).
  void keep_optimized_routine() { keep_optimized_ = true; }
  const std::optional<ir::LoweredRoutine>& optimized_routine() const { return optimized_; }
  /// The tuner's report on the tuned routine (a tuned cell, after compile()).
  const std::optional<tune::TuneReport>& tune_report() const { return tune_report_; }

 private:
  Workload workload_;
  io::SafetensorsFile fixture_;
  runtime::Context ctx_;
  std::optional<LossGraph> graph_;
  std::optional<train::TrainingStep> training_;
  runtime::Routine forward_;
  bool tune_ = false;
  std::optional<tune::TuneReport> tune_report_;
  bool keep_optimized_ = false;
  std::optional<ir::LoweredRoutine> optimized_;

  runtime::Routine compile_routine(runtime::Context& ctx, const ir::Comp& comp, const std::string& name);
};

}  // namespace cannl::bench
