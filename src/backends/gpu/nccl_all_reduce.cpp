// The NCCL all-reduce across CUDA devices and processes (cannl/backends/multi_device.h).
//
// One communicator per local device, created once (communicator setup costs far more than an
// all-reduce). Every call that involves several local devices is inside ncclGroupStart /
// ncclGroupEnd: outside a group the first device's call would wait for the others, which this
// thread has not reached yet. Each device's calls are made with its primary context current
// (NCCL takes the device from the current context); the thread's own context comes back when a
// call of this class returns (CallersContext).
//
// A member that died or hangs leaves NCCL's kernels waiting on the others' streams forever, so
// each average waits on the host until its collectives are done, polling NCCL's asynchronous
// error, at most distributed_timeout_s seconds (as MPI's collectives do); then it aborts the
// communicators (ncclCommAbort) and throws a DistributedError. The host wait costs the overlap of
// the next step's kernel launches with the all-reduce, which the update waits for anyway.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "backends/gpu/cuda_device.h"
#include "backends/gpu/gpu_backend.h"
#include "backends/gpu/nccl_api.h"
#include "cannl/backends/multi_device.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::backends {

namespace {

using gpu::NcclApi;

struct LocalDevice {
  std::shared_ptr<gpu::Device> device;
  gpu::CudaDeviceHandles handles;
};

std::vector<LocalDevice> cuda_devices_of(std::span<Backend* const> backends) {
  if (backends.empty()) throw RuntimeUsageError("an NCCL all-reduce needs at least one device");
  std::vector<LocalDevice> out;
  std::set<int> ordinals;
  for (std::size_t d = 0; d < backends.size(); ++d) {
    const auto* device = backends[d] == nullptr ? nullptr : gpu_device_of(*backends[d]);
    const auto handles = device == nullptr ? std::nullopt : gpu::cuda_handles(**device);
    if (!handles)
      throw RuntimeUsageError("NCCL runs between CUDA devices; device " + std::to_string(d) + " is " +
                              (backends[d] == nullptr ? std::string("null") : std::string(backends[d]->name())));
    if (!ordinals.insert(handles->device).second)
      throw RuntimeUsageError("NCCL needs distinct GPUs: CUDA device " + std::to_string(handles->device) +
                              " is listed twice (two contexts on one GPU cannot be members of one communicator)");
    out.push_back({*device, *handles});
  }
  return out;
}

// The context the calling thread had, current again when the scope ends, also by an exception
// (driver::Current does this for one device; an all-reduce moves among several).
class CallersContext {
 public:
  explicit CallersContext(const gpu::CudaDriverApi& api) : api_(api) {
    known_ = api.cuCtxGetCurrent(&context_) == gpu::cuda::CUDA_SUCCESS;
  }
  ~CallersContext() {
    if (known_) api_.cuCtxSetCurrent(context_);
  }
  CallersContext(const CallersContext&) = delete;
  CallersContext& operator=(const CallersContext&) = delete;

 private:
  const gpu::CudaDriverApi& api_;
  gpu::cuda::CUcontext context_ = nullptr;
  bool known_ = false;
};

class NcclAllReduce final : public DeviceAllReduce {
 public:
  NcclAllReduce(const NcclApi& api, std::vector<LocalDevice> devices, const DeviceAllReduceRanks& ranks)
      : api_(api), devices_(std::move(devices)), processes_(ranks.processes) {
    const CallersContext callers(driver());
    comms_.assign(devices_.size(), nullptr);
    try {
      if (ranks.processes == 1) {
        init_all();
      } else {
        init_ranks(ranks);
      }
    } catch (...) {
      release(true);  // the destructor does not run for a constructor that throws
      throw;
    }
  }
  ~NcclAllReduce() override { release(false); }
  NcclAllReduce(const NcclAllReduce&) = delete;
  NcclAllReduce& operator=(const NcclAllReduce&) = delete;

  void average(const std::vector<std::vector<Buffer*>>& buffers, ReduceType type, std::string_view what) override {
    if (!broken_.empty())
      throw DistributedError("NCCL all-reduce of " + std::string(what) + ": the communicators were aborted after " + broken_);
    if (buffers.size() != devices_.size())
      throw RuntimeUsageError("NCCL all-reduce of " + std::string(what) + ": buffers of " + std::to_string(buffers.size()) +
                              " devices for a communicator of " + std::to_string(devices_.size()));
    const std::size_t element = type == ReduceType::F32 ? sizeof(float) : sizeof(double);
    const gpu::ncclDataType_t dtype = type == ReduceType::F32 ? gpu::ncclFloat32 : gpu::ncclFloat64;
    // Pointers first: a bad argument throws before NCCL sees a partial group.
    const auto pointers = device_pointers(buffers, element, what);
    const CallersContext callers(driver());
    try {
      reduce(buffers, pointers, element, dtype, what);
    } catch (const std::exception& e) {
      // The other devices' collectives would wait for the failed one forever (and a later
      // ncclCommDestroy for them): abort every communicator, as fail() does.
      if (broken_.empty()) {
        broken_ = "the all-reduce of " + std::string(what) + " failed: " + e.what();
        release(true);
      }
      throw;
    }
  }

  std::string describe() const override {
    return "NCCL " + api_.version() + ": " + std::to_string(devices_.size()) + " device(s) x " +
           std::to_string(processes_) + " process(es)";
  }

 private:
  using cuda_pointer_t = gpu::cuda::CUdeviceptr;

  /// One group of in-place averages, one per buffer and device, then the wait for all of them.
  void reduce(const std::vector<std::vector<Buffer*>>& buffers, const std::vector<std::vector<cuda_pointer_t>>& pointers,
              std::size_t element, gpu::ncclDataType_t dtype, std::string_view what) {
    api_.check(api_.ncclGroupStart(), "ncclGroupStart");
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      current(static_cast<int>(d));
      for (std::size_t k = 0; k < pointers[d].size(); ++k) {
        auto* data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(pointers[d][k]));
        const gpu::ncclResult_t result = api_.ncclAllReduce(data, data, buffers[d][k]->size() / element, dtype,
                                                             gpu::ncclAvg, comms_[d], devices_[d].handles.stream);
        if (result != gpu::ncclSuccess) {
          api_.ncclGroupEnd();
          api_.check(result, "ncclAllReduce", std::string(what) + ", buffer " + std::to_string(k) + " of device " +
                                                  std::to_string(d));
        }
      }
    }
    api_.check(api_.ncclGroupEnd(), "ncclGroupEnd", std::string(what));
    await(what);
  }

  /// The CUDA driver of the devices (the first one's: a process loads one).
  const gpu::CudaDriverApi& driver() const { return *devices_.front().handles.api; }

  void current(int d) const {
    const auto& h = devices_[static_cast<std::size_t>(d)].handles;
    h.api->check(h.api->cuCtxSetCurrent(h.context), "cuCtxSetCurrent");
  }

  /// pointers[d][k]: the device pointer of buffers[d][k], checked against device 0's sizes.
  std::vector<std::vector<cuda_pointer_t>> device_pointers(const std::vector<std::vector<Buffer*>>& buffers,
                                                           std::size_t element, std::string_view what) const {
    std::vector<std::vector<cuda_pointer_t>> pointers(devices_.size());
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      if (buffers[d].size() != buffers[0].size())
        throw RuntimeUsageError("NCCL all-reduce of " + std::string(what) + ": device " + std::to_string(d) + " has " +
                                std::to_string(buffers[d].size()) + " buffers, device 0 " + std::to_string(buffers[0].size()));
      for (std::size_t k = 0; k < buffers[d].size(); ++k) {
        if (buffers[d][k]->size() != buffers[0][k]->size() || buffers[d][k]->size() % element != 0)
          throw RuntimeUsageError("NCCL all-reduce of " + std::string(what) + ": buffer " + std::to_string(k) +
                                  " has " + std::to_string(buffers[d][k]->size()) + " bytes on device " + std::to_string(d) +
                                  " and " + std::to_string(buffers[0][k]->size()) + " on device 0");
        pointers[d].push_back(gpu::cuda_pointer(*devices_[d].device, *buffers[d][k]));
      }
    }
    return pointers;
  }

  /// One process: NCCL makes every communicator at once.
  void init_all() {
    std::vector<int> ordinals;
    for (const auto& d : devices_) ordinals.push_back(d.handles.device);
    api_.check(api_.ncclCommInitAll(comms_.data(), static_cast<int>(ordinals.size()), ordinals.data()),
               "ncclCommInitAll", std::to_string(ordinals.size()) + " device(s)");
  }
  /// Several processes: rank 0's unique id to every process, then one rank per local device, in
  /// one group (each ncclCommInitRank waits for every rank otherwise).
  void init_ranks(const DeviceAllReduceRanks& ranks) {
    if (!ranks.broadcast_from_rank0)
      throw RuntimeUsageError("an NCCL all-reduce over " + std::to_string(ranks.processes) +
                              " processes needs a broadcast to send rank 0's unique id");
    gpu::ncclUniqueId id{};
    if (ranks.process_rank == 0) api_.check(api_.ncclGetUniqueId(&id), "ncclGetUniqueId");
    ranks.broadcast_from_rank0(std::as_writable_bytes(std::span(id.internal)));
    const int local = static_cast<int>(devices_.size());
    const int total = local * ranks.processes;
    api_.check(api_.ncclGroupStart(), "ncclGroupStart");
    for (int d = 0; d < local; ++d) {
      current(d);
      const int rank = ranks.process_rank * local + d;
      const gpu::ncclResult_t result = api_.ncclCommInitRank(&comms_[static_cast<std::size_t>(d)], total, id, rank);
      if (result != gpu::ncclSuccess) {
        api_.ncclGroupEnd();
        api_.check(result, "ncclCommInitRank", "rank " + std::to_string(rank) + " of " + std::to_string(total));
      }
    }
    api_.check(api_.ncclGroupEnd(), "ncclGroupEnd", "creating the communicators of " + std::to_string(total) + " ranks");
  }

  /// Destroys (or, after a failure, aborts) the communicators.
  void release(bool abort) {
    const CallersContext callers(driver());
    for (std::size_t d = 0; d < comms_.size(); ++d) {
      if (comms_[d] == nullptr) continue;
      devices_[d].handles.api->cuCtxSetCurrent(devices_[d].handles.context);
      (abort ? api_.ncclCommAbort : api_.ncclCommDestroy)(comms_[d]);
      comms_[d] = nullptr;
    }
  }
  [[noreturn]] void fail(const std::string& message) {
    broken_ = message;
    release(true);
    throw DistributedError(message);
  }

  /// Waits until every device's collectives of this call are done (an event recorded after them
  /// completes), or NCCL reports an asynchronous error, or the timeout passes.
  void await(std::string_view what) {
    const double seconds = config::get_double("distributed_timeout_s");
    if (!(seconds > 0))
      throw ConfigError("config key 'distributed_timeout_s' = '" + config::get("distributed_timeout_s") +
                        "': expected a number of seconds > 0");
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(seconds));
    Events events(*this);
    std::vector<bool> done(devices_.size(), false);
    for (int polls = 0;; ++polls) {
      bool all = true;
      for (std::size_t d = 0; d < devices_.size(); ++d) {
        if (done[d]) continue;
        const auto& api = *devices_[d].handles.api;
        current(static_cast<int>(d));
        const gpu::cuda::CUresult state = api.cuEventQuery(events.handles[d]);
        if (state == gpu::cuda::CUDA_SUCCESS) {
          done[d] = true;
          continue;
        }
        if (state != gpu::cuda::CUDA_ERROR_NOT_READY) api.check(state, "cuEventQuery", "after the NCCL all-reduce of " + std::string(what));
        all = false;
        gpu::ncclResult_t async = gpu::ncclSuccess;
        api_.check(api_.ncclCommGetAsyncError(comms_[d], &async), "ncclCommGetAsyncError");
        if (async != gpu::ncclSuccess && async != gpu::ncclInProgress)
          fail("NCCL: the all-reduce of " + std::string(what) + " failed on device " + std::to_string(d) + ": " +
               api_.ncclGetErrorString(async) + " (another process of the run may have died)");
      }
      if (all) return;
      if (std::chrono::steady_clock::now() >= end)
        fail("NCCL: the all-reduce of " + std::string(what) + " did not complete within " + config::get("distributed_timeout_s") +
             " s (distributed_timeout_s): a process of the run died or hangs; the NCCL communicators were aborted");
      if (polls < 100) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  /// One event per device, recorded on its stream after the collectives just enqueued.
  struct Events {
    explicit Events(const NcclAllReduce& owner) : owner(owner) {
      try {
        for (std::size_t d = 0; d < owner.devices_.size(); ++d) {
          const auto& h = owner.devices_[d].handles;
          owner.current(static_cast<int>(d));
          gpu::cuda::CUevent event = nullptr;
          h.api->check(h.api->cuEventCreate(&event, gpu::cuda::CU_EVENT_DISABLE_TIMING), "cuEventCreate");
          handles.push_back(event);
          h.api->check(h.api->cuEventRecord(event, h.stream), "cuEventRecord");
        }
      } catch (...) {
        destroy();  // the destructor does not run for a constructor that throws
        throw;
      }
    }
    ~Events() { destroy(); }
    Events(const Events&) = delete;
    Events& operator=(const Events&) = delete;
    void destroy() {
      for (std::size_t d = 0; d < handles.size(); ++d) {
        const auto& h = owner.devices_[d].handles;
        h.api->cuCtxSetCurrent(h.context);
        h.api->cuEventDestroy(handles[d]);
      }
      handles.clear();
    }
    const NcclAllReduce& owner;
    std::vector<gpu::cuda::CUevent> handles;
  };

  const NcclApi& api_;
  std::vector<LocalDevice> devices_;
  int processes_;
  std::vector<gpu::ncclComm_t> comms_;
  std::string broken_;  // why the communicators were aborted; empty while they work
};

}  // namespace

bool nccl_available(std::string* why) {
  try {
    gpu::NcclApi::get();
    return true;
  } catch (const BackendUnavailable& e) {
    if (why != nullptr) *why = e.what();
    return false;
  }
}

std::unique_ptr<DeviceAllReduce> open_nccl_all_reduce(std::span<Backend* const> devices, const DeviceAllReduceRanks& ranks) {
  if (ranks.processes < 1 || ranks.process_rank < 0 || ranks.process_rank >= ranks.processes)
    throw RuntimeUsageError("NCCL all-reduce: process rank " + std::to_string(ranks.process_rank) + " of " +
                            std::to_string(ranks.processes));
  std::vector<LocalDevice> local = cuda_devices_of(devices);
  return std::make_unique<NcclAllReduce>(gpu::NcclApi::get(), std::move(local), ranks);
}

}  // namespace cannl::backends
