// The NCCL all-reduce across CUDA devices and processes (cannl/backends/multi_device.h).
//
// One communicator per local device, created once (communicator setup costs far more than an
// all-reduce). Every call that involves several local devices is inside ncclGroupStart /
// ncclGroupEnd: outside a group the first device's call would wait for the others, which this
// thread has not reached yet. Each device's calls are made with its primary context current
// (NCCL takes the device from the current context).
#include <algorithm>
#include <cstring>
#include <set>

#include "backends/gpu/cuda_device.h"
#include "backends/gpu/gpu_backend.h"
#include "backends/gpu/nccl_api.h"
#include "cannl/backends/multi_device.h"
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

class NcclAllReduce final : public DeviceAllReduce {
 public:
  NcclAllReduce(const NcclApi& api, std::vector<LocalDevice> devices, const DeviceAllReduceRanks& ranks)
      : api_(api), devices_(std::move(devices)), processes_(ranks.processes) {
    comms_.assign(devices_.size(), nullptr);
    if (ranks.processes == 1) {
      std::vector<int> ordinals;
      for (const auto& d : devices_) ordinals.push_back(d.handles.device);
      api_.check(api_.ncclCommInitAll(comms_.data(), static_cast<int>(ordinals.size()), ordinals.data()),
                 "ncclCommInitAll", std::to_string(ordinals.size()) + " device(s)");
      return;
    }
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
  ~NcclAllReduce() override {
    for (std::size_t d = 0; d < comms_.size(); ++d) {
      if (comms_[d] == nullptr) continue;
      devices_[d].handles.api->cuCtxSetCurrent(devices_[d].handles.context);
      api_.ncclCommDestroy(comms_[d]);
    }
  }
  NcclAllReduce(const NcclAllReduce&) = delete;
  NcclAllReduce& operator=(const NcclAllReduce&) = delete;

  void average(const std::vector<std::vector<Buffer*>>& buffers, ReduceType type, std::string_view what) override {
    if (buffers.size() != devices_.size())
      throw RuntimeUsageError("NCCL all-reduce of " + std::string(what) + ": buffers of " + std::to_string(buffers.size()) +
                              " devices for a communicator of " + std::to_string(devices_.size()));
    const std::size_t element = type == ReduceType::F32 ? sizeof(float) : sizeof(double);
    const gpu::ncclDataType_t dtype = type == ReduceType::F32 ? gpu::ncclFloat32 : gpu::ncclFloat64;
    // Pointers first: a bad argument throws before NCCL sees a partial group.
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
  }

  std::string describe() const override {
    return "NCCL " + api_.version() + ": " + std::to_string(devices_.size()) + " device(s) x " +
           std::to_string(processes_) + " process(es)";
  }

 private:
  using cuda_pointer_t = gpu::cuda::CUdeviceptr;
  void current(int d) const {
    const auto& h = devices_[static_cast<std::size_t>(d)].handles;
    h.api->check(h.api->cuCtxSetCurrent(h.context), "cuCtxSetCurrent");
  }

  const NcclApi& api_;
  std::vector<LocalDevice> devices_;
  int processes_;
  std::vector<gpu::ncclComm_t> comms_;
};

}  // namespace

std::unique_ptr<DeviceAllReduce> open_nccl_all_reduce(std::span<Backend* const> devices, const DeviceAllReduceRanks& ranks) {
  if (ranks.processes < 1 || ranks.process_rank < 0 || ranks.process_rank >= ranks.processes)
    throw RuntimeUsageError("NCCL all-reduce: process rank " + std::to_string(ranks.process_rank) + " of " +
                            std::to_string(ranks.processes));
  std::vector<LocalDevice> local = cuda_devices_of(devices);
  return std::make_unique<NcclAllReduce>(gpu::NcclApi::get(), std::move(local), ranks);
}

}  // namespace cannl::backends
