#pragma once
// NCCL (libnccl.so.2), NVIDIA's collectives between GPUs, loaded at run time with our own
// declarations of the few types and functions data-parallel training needs (those of nccl.h,
// NCCL 2.x): no NCCL header or library at build time, and a machine without it gets a
// BackendUnavailable naming the library, never a link failure.
//
//   const NcclApi& nccl = NcclApi::get();                 // BackendUnavailable when missing
//   nccl.check(nccl.ncclGetUniqueId(&id), "ncclGetUniqueId");
//   nccl.check(nccl.ncclCommInitRank(&comm, ranks, id, rank), "ncclCommInitRank");
//   nccl.check(nccl.ncclAllReduce(grads, grads, n, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
//
// A hung peer is detected as with MPI (runtime/mpi_communicator.cpp): the caller polls
// ncclCommGetAsyncError and the stream against a deadline, and ncclCommAbort ends the
// communicator instead of waiting forever.

#include <cstddef>
#include <string>
#include <vector>

namespace cannl::backends::gpu {

struct NcclComm;
using ncclComm_t = NcclComm*;
/// Opaque id rank 0 makes and sends to the others (over MPI) before ncclCommInitRank.
struct ncclUniqueId {
  char internal[128];
};
using ncclResult_t = int;
constexpr ncclResult_t ncclSuccess = 0;
constexpr ncclResult_t ncclInProgress = 7;
using ncclDataType_t = int;
constexpr ncclDataType_t ncclFloat32 = 7;
constexpr ncclDataType_t ncclFloat64 = 8;
using ncclRedOp_t = int;
constexpr ncclRedOp_t ncclSum = 0;
/// The mean over the ranks (NCCL >= 2.10): for floats the sum of each value times 1/ranks.
constexpr ncclRedOp_t ncclAvg = 4;
/// A CUDA stream (CUstream) as NCCL takes it.
using NcclStream = void*;

struct NcclApi {
  ncclResult_t (*ncclGetVersion)(int* version) = nullptr;
  const char* (*ncclGetErrorString)(ncclResult_t result) = nullptr;
  ncclResult_t (*ncclGetUniqueId)(ncclUniqueId* id) = nullptr;
  ncclResult_t (*ncclCommInitRank)(ncclComm_t* comm, int ranks, ncclUniqueId id, int rank) = nullptr;
  ncclResult_t (*ncclCommInitAll)(ncclComm_t* comms, int devices, const int* device_list) = nullptr;
  ncclResult_t (*ncclGroupStart)() = nullptr;
  ncclResult_t (*ncclGroupEnd)() = nullptr;
  ncclResult_t (*ncclCommDestroy)(ncclComm_t comm) = nullptr;
  ncclResult_t (*ncclCommAbort)(ncclComm_t comm) = nullptr;
  ncclResult_t (*ncclCommGetAsyncError)(ncclComm_t comm, ncclResult_t* async_error) = nullptr;
  ncclResult_t (*ncclAllReduce)(const void* send, void* receive, std::size_t count, ncclDataType_t type,
                                ncclRedOp_t op, ncclComm_t comm, NcclStream stream) = nullptr;
  std::string library;

  /// The library (config key nccl_library, else nccl_candidates()), loaded and bound once per
  /// process and name. Throws BackendUnavailable naming every file tried when it is missing, or
  /// the function an old NCCL lacks, or its version when older than 2.10 (no ncclAvg).
  static const NcclApi& get();
  /// The first of `candidates` that loads, bound (a new table each call; tests load a mock).
  static NcclApi load(const std::vector<std::string>& candidates);
  /// Throws DistributedError "NCCL: <call> failed: <NCCL's text>; <context>" unless `result` is
  /// ncclSuccess (NCCL's failures are those of the collective's other members as often as ours).
  void check(ncclResult_t result, const char* call, const std::string& context = "") const;
  /// "2.21.5", from ncclGetVersion.
  std::string version() const;
};

/// The names tried for libnccl, in order (the soname, then the CUDA toolkit's folders).
std::vector<std::string> nccl_candidates();

}  // namespace cannl::backends::gpu
