// Data-parallel training over the devices of a context and the processes of a communicator.
#include "cannl/nn/data_parallel.h"

#include <algorithm>
#include <csignal>
#include <chrono>
#include <cstring>
#include <thread>

#include "cannl/backends/multi_device.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/log.h"
#include "nn/step_parts.h"

namespace cannl::train {

namespace {

ir::Comp comp_of(std::vector<ir::AsgnRef> body, const std::string& comment) {
  ir::Comp c;
  c.body.push_back(ir::make_block(comment, std::move(body)));
  return c;
}

int local_device_count(const runtime::Context& ctx, const ParallelOptions& parallel) {
  if (parallel.devices < 0 || parallel.devices > ctx.num_devices())
    throw RuntimeUsageError("data_parallel: devices = " + std::to_string(parallel.devices) +
                            " but the context holds " + std::to_string(ctx.num_devices()) +
                            " device(s); make it with runtime::Context::cpu_devices(n) or cuda_devices");
  return parallel.devices == 0 ? ctx.num_devices() : parallel.devices;
}

Replica compile_replica(runtime::Context ctx, const Tensor& loss, const StepParts& parts,
                        const StepOptions& options) {
  Replica r{ctx, {}, {}, {}, {}};
  upload_literals(r.ctx, {loss});
  // Compile order is execution order (the context's dependencies): init, reset, gradients, update.
  r.init = r.ctx.compile(parts.init, "init_params");
  r.reset_loss = r.ctx.compile(parts.reset_loss, "reset_epoch_loss");
  ir::Comp gradients = parts.gradients;
  gradients.body.push_back(parts.accumulate_loss);
  r.gradients = r.ctx.compile(gradients, options.name + "_gradients", options.step_compile);
  r.update = r.ctx.compile(comp_of(parts.update, "update"), options.name + "_update", options.step_compile);
  r.ctx.run(r.init);
  r.ctx.run(r.reset_loss);
  return r;
}

/// Every rank's local device count, by one all-reduce of a vector holding this rank's count at
/// its own index (zeros elsewhere): every rank gets the same vector, so all of them decide alike.
std::vector<int> gather_device_counts(int devices, runtime::Communicator& comm) {
  std::vector<double> counts(static_cast<std::size_t>(comm.size()), 0.0);
  counts[static_cast<std::size_t>(comm.rank())] = devices;
  if (comm.size() > 1) comm.allreduce_sum(std::span<double>(counts), "the local device counts of data_parallel");
  return std::vector<int>(counts.begin(), counts.end());
}

/// kill:R:S / hang:R:S (config distributed_fault_injection): rank R dies or hangs before global
/// step S, for the tests of the others' timeout.
void inject_fault(const runtime::Communicator& comm, std::int64_t global_step) {
  const std::string spec = config::get("distributed_fault_injection");
  if (spec.empty()) return;
  const auto first = spec.find(':');
  const auto second = spec.find(':', first + 1);
  if (first == std::string::npos || second == std::string::npos)
    throw ConfigError("config key 'distributed_fault_injection' = '" + spec + "': expected kill:RANK:STEP or hang:RANK:STEP");
  const std::string kind = spec.substr(0, first);
  long rank = 0, step = 0;
  try {
    rank = std::stol(spec.substr(first + 1, second - first - 1));
    step = std::stol(spec.substr(second + 1));
  } catch (const std::exception&) {
    throw ConfigError("config key 'distributed_fault_injection' = '" + spec + "': RANK and STEP must be integers");
  }
  if (rank != comm.rank() || step != global_step) return;
  if (kind == "kill") std::raise(SIGKILL);
  if (kind == "hang")
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  throw ConfigError("config key 'distributed_fault_injection' = '" + spec + "': the kind must be kill or hang");
}

/// NCCL over the replicas' CUDA devices per config gpu_all_reduce; null (the host sums) where
/// it does not apply or, with auto, libnccl is missing.
std::shared_ptr<runtime::DeviceAverage> open_device_average(std::vector<runtime::Context> devices,
                                                            const std::shared_ptr<runtime::Communicator>& comm) {
  const std::string mode = config::get_one_of("gpu_all_reduce", {"auto", "nccl", "host"});
  const std::string_view backend = devices.front().backend_name();
  if (mode == "host") return nullptr;
  if (backend != "cuda") {
    if (mode == "nccl")
      throw RuntimeUsageError("gpu_all_reduce=nccl, but data_parallel runs on " + std::string(backend) +
                              " devices; NCCL needs CUDA devices (runtime::Context::cuda_devices)");
    return nullptr;
  }
  if (devices.size() == 1 && comm->size() == 1) return nullptr;
  // Every process decides alike: one without NCCL would leave the others in ncclCommInitRank.
  std::string why;
  double missing[] = {backends::nccl_available(&why) ? 0.0 : 1.0};
  if (comm->size() > 1) comm->allreduce_sum(std::span<double>(missing), "whether every process loads NCCL");
  if (missing[0] > 0) {
    if (why.empty()) why = std::to_string(static_cast<int>(missing[0])) + " process(es) of the run cannot load libnccl";
    if (mode == "nccl") throw BackendUnavailable("gpu_all_reduce=nccl: " + why);
    if (logging::debug_level() >= 1)
      logging::info("data_parallel: gradients summed on the host and over " + comm->describe() +
                    " (gpu_all_reduce=auto and " + why + ")");
    return nullptr;
  }
  auto average = runtime::DeviceAverage::open_nccl(std::move(devices), comm);
  if (logging::debug_level() >= 1) logging::info("data_parallel: gradients averaged by " + average->describe());
  return average;
}

}  // namespace

void check_equal_device_counts(std::span<const int> devices_per_rank) {
  if (devices_per_rank.empty() ||
      std::all_of(devices_per_rank.begin(), devices_per_rank.end(), [&](int n) { return n == devices_per_rank[0]; }))
    return;
  std::string counts;
  for (std::size_t r = 0; r < devices_per_rank.size(); ++r)
    counts += (r ? ", rank " : "rank ") + std::to_string(r) + " has " + std::to_string(devices_per_rank[r]);
  throw RuntimeUsageError("data_parallel: the processes run different numbers of local devices (" + counts +
                          " device(s)); every process must run as many replicas, since global step g runs micro-batch "
                          "g * R + r on replica r and the average divides by R = devices x processes; give every "
                          "process the same ParallelOptions::devices (cannl: the same --devices) and as many devices");
}

void DataParallel::run_step(std::int64_t step_in_epoch) {
  inject_fault(*communicator, steps_done);
  const auto replicas_total = static_cast<std::int64_t>(replicas());
  const std::int64_t first = static_cast<std::int64_t>(communicator->rank()) * static_cast<std::int64_t>(local.size());
  for (std::size_t d = 0; d < local.size(); ++d) {
    // Replica r of global step g takes micro-batch g * R + r: the rows of the global batch g.
    const std::int64_t micro[] = {step_in_epoch * replicas_total + first + static_cast<std::int64_t>(d)};
    Replica& r = local[d];
    r.ctx.run(r.gradients, std::span<const std::int64_t>(micro, r.gradients.statics().empty() ? 0 : 1));
  }
  all_reduce_gradients();
  for (Replica& r : local) r.ctx.run(r.update);
  ++steps_done;
}

namespace {

/// Adds a gradient's values to `sum` (f32 and f64 straight from their bytes; other dtypes through
/// get_values' conversion).
void add_gradient(runtime::Context& ctx, const ir::NodeRef& g, double* sum) {
  if (g->dtype == ir::DType::F32 || g->dtype == ir::DType::F64) {
    const std::vector<std::byte> bytes = ctx.get_bytes(g);
    if (g->dtype == ir::DType::F32) {
      const std::size_t n = bytes.size() / sizeof(float);
      for (std::size_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, bytes.data() + i * sizeof(float), sizeof v);
        sum[i] += static_cast<double>(v);
      }
    } else {
      const std::size_t n = bytes.size() / sizeof(double);
      for (std::size_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, bytes.data() + i * sizeof(double), sizeof v);
        sum[i] += v;
      }
    }
    return;
  }
  const std::vector<double> values = ctx.get_values(g);
  for (std::size_t i = 0; i < values.size(); ++i) sum[i] += values[i];
}

/// Writes the averaged gradient (rounded once to the node's dtype).
void set_gradient(runtime::Context& ctx, const ir::NodeRef& g, std::span<const double> values) {
  if (g->dtype == ir::DType::F32) {
    std::vector<std::byte> bytes(values.size() * sizeof(float));
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto v = static_cast<float>(values[i]);
      std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof v);
    }
    ctx.set_bytes(g, bytes);
  } else if (g->dtype == ir::DType::F64) {
    ctx.set_bytes(g, std::as_bytes(values));
  } else {
    ctx.set_values(g, values);
  }
}

}  // namespace

void DataParallel::all_reduce_gradients() {
  std::size_t total = 0;
  bool all_f32 = true, all_f64 = true;
  for (const auto& g : gradients) {
    total += static_cast<std::size_t>(g->num_logical_elements());
    all_f32 = all_f32 && g->dtype == ir::DType::F32;
    all_f64 = all_f64 && g->dtype == ir::DType::F64;
  }
  logging::ScopedTimer timer("all-reduce of " + std::to_string(total) + " gradient values");
  if (device_average && (all_f32 || all_f64)) {
    device_average->run(gradients, "gradients of global step " + std::to_string(steps_done));
  } else if (all_f32) {
    all_reduce_f32(total);
  } else {
    all_reduce_f64(total);
  }
}

void DataParallel::all_reduce_f32(std::size_t total) {
  // f32 gradients stay f32 (half the bytes of doubles): one contiguous buffer, the local
  // replicas added in device order, the processes' buffers added by one all-reduce, the sum
  // scaled by 1/R. Two replicas make one rounded addition either way, so two devices and two
  // processes compute the same bits.
  std::vector<float> sum(total, 0.0f);
  for (std::size_t d = 0; d < local.size(); ++d) {
    std::size_t at = 0;
    for (const auto& g : gradients) {
      const std::vector<std::byte> bytes = local[d].ctx.get_bytes(g);
      const std::size_t n = bytes.size() / sizeof(float);
      if (d == 0) {
        std::memcpy(sum.data() + at, bytes.data(), bytes.size());
      } else {
        for (std::size_t i = 0; i < n; ++i) {
          float v;
          std::memcpy(&v, bytes.data() + i * sizeof(float), sizeof v);
          sum[at + i] += v;
        }
      }
      at += n;
    }
  }
  {
    logging::ScopedTimer between("sum over " + communicator->describe());
    communicator->allreduce_sum(std::span<float>(sum), "gradients of global step " + std::to_string(steps_done));
  }
  const auto scale = static_cast<float>(1.0 / static_cast<double>(replicas()));
  if (replicas() > 1)
    for (float& v : sum) v *= scale;
  const auto bytes = std::as_bytes(std::span<const float>(sum));
  for (Replica& r : local) {
    std::size_t at = 0;
    for (const auto& g : gradients) {
      const auto n = static_cast<std::size_t>(g->num_logical_elements()) * sizeof(float);
      r.ctx.set_bytes(g, bytes.subspan(at, n));
      at += n;
    }
  }
}

void DataParallel::all_reduce_f64(std::size_t total) {
  // Mixed or other dtypes: summed in double (one rounding to each node's dtype at the end).
  std::vector<double> sum(total, 0.0);
  for (Replica& r : local) {
    std::size_t at = 0;
    for (const auto& g : gradients) {
      add_gradient(r.ctx, g, sum.data() + at);
      at += static_cast<std::size_t>(g->num_logical_elements());
    }
  }
  {
    logging::ScopedTimer between("sum over " + communicator->describe());
    communicator->allreduce_sum(std::span<double>(sum), "gradients of global step " + std::to_string(steps_done));
  }
  const double scale = 1.0 / static_cast<double>(replicas());
  for (double& v : sum) v *= scale;
  for (Replica& r : local) {
    std::size_t at = 0;
    for (const auto& g : gradients) {
      const auto n = static_cast<std::size_t>(g->num_logical_elements());
      set_gradient(r.ctx, g, std::span<const double>(sum.data() + at, n));
      at += n;
    }
  }
}

double DataParallel::epoch_loss_sum() {
  double sum[] = {0.0};
  for (Replica& r : local) sum[0] += r.ctx.get_values(epoch_loss).at(0);
  communicator->allreduce_sum(std::span<double>(sum), "epoch loss after global step " + std::to_string(steps_done));
  return sum[0];
}

void DataParallel::reset_loss() {
  for (Replica& r : local) r.ctx.run(r.reset_loss);
}

TrainingStep data_parallel(runtime::Context ctx, const Tensor& loss, const StepOptions& options,
                           const ParallelOptions& parallel) {
  if (options.loss_scale)
    throw RuntimeUsageError("data_parallel: dynamic loss scaling (StepOptions::loss_scale) is not "
                            "available for data-parallel steps yet; train on one device, or without it");
  if (options.compile_step_routine)
    throw RuntimeUsageError("data_parallel: StepOptions::compile_step_routine is not supported (the step is two "
                            "routines per replica); use step_compile for a schedule");
  auto dp = std::make_shared<DataParallel>();
  dp->communicator = parallel.communicator ? parallel.communicator : runtime::single_process_communicator();
  const int devices = local_device_count(ctx, parallel);
  // Before any other check that could fail on some ranks only: every rank reaches this exchange.
  check_equal_device_counts(gather_device_counts(devices, *dp->communicator));
  const std::int64_t replicas = static_cast<std::int64_t>(devices) * dp->communicator->size();
  const std::int64_t micro_batches = steps_per_epoch(options, "data_parallel");
  if (micro_batches % replicas != 0)
    throw RuntimeUsageError("data_parallel: " + std::to_string(micro_batches) + " micro-batches do not split into " +
                            "global steps of " + std::to_string(replicas) + " replicas (" + std::to_string(devices) +
                            " device(s) x " + std::to_string(dp->communicator->size()) +
                            " process(es)); make n_batches a multiple of the replica count");
  // Before compiling: a configuration that cannot run fails at once.
  std::vector<runtime::Context> device_handles;
  for (int d = 0; d < devices; ++d) device_handles.push_back(ctx.device(d));
  dp->device_average = open_device_average(device_handles, dp->communicator);
  StepParts parts = step_parts(loss, options);
  for (int d = 0; d < devices; ++d) dp->local.push_back(compile_replica(ctx.device(d), loss, parts, options));
  for (const auto& p : parts.params) {
    dp->params.push_back(p.value());
    if (p.grad()) dp->gradients.push_back(p.grad());
  }
  dp->optimizer_state = parts.optimizer_state;
  dp->epoch_loss = parts.epoch_loss;
  // Replicate device 0's parameters and optimizer state (initialization is seeded, so they agree
  // already; the copy makes the replicas equal whatever the initializer).
  for (int d = 1; d < devices; ++d) {
    for (const auto& node : dp->params) runtime::Context::copy(dp->local[0].ctx, dp->local[static_cast<std::size_t>(d)].ctx, node);
    for (const auto& node : dp->optimizer_state)
      runtime::Context::copy(dp->local[0].ctx, dp->local[static_cast<std::size_t>(d)].ctx, node);
  }
  const Replica& first = dp->local.front();
  TrainingStep s{first.ctx, loss, first.init, first.gradients, first.reset_loss, parts.epoch_loss,
                 micro_batches / replicas, std::move(parts.adam), dp, dp->params, dp->optimizer_state};
  s.model_state = parts.model_state;  // each replica's own statistics; checkpoints keep replica 0's
  return s;
}

}  // namespace cannl::train
