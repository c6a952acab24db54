// NCCL loaded at run time (see nccl_api.h).
#include "backends/gpu/nccl_api.h"

#include <memory>
#include <mutex>

#include "backends/gpu/api_library.h"
#include "cannl/support/error.h"

namespace cannl::backends::gpu {

std::vector<std::string> nccl_candidates() { return cuda_toolkit_candidates({"libnccl.so.2", "libnccl.so"}); }

namespace {

NcclApi load_nccl() {
  const ApiLibrary lib(nccl_candidates(), "NCCL (collectives between NVIDIA GPUs)");
  NcclApi api;
  lib.bind(api.ncclGetVersion, "ncclGetVersion");
  lib.bind(api.ncclGetErrorString, "ncclGetErrorString");
  lib.bind(api.ncclGetUniqueId, "ncclGetUniqueId");
  lib.bind(api.ncclCommInitRank, "ncclCommInitRank");
  lib.bind(api.ncclCommDestroy, "ncclCommDestroy");
  lib.bind(api.ncclCommAbort, "ncclCommAbort");
  lib.bind(api.ncclCommGetAsyncError, "ncclCommGetAsyncError");
  lib.bind(api.ncclAllReduce, "ncclAllReduce");
  api.library = lib.path();
  return api;
}

}  // namespace

const NcclApi& NcclApi::get() {
  // A failed load is retried on the next call (the error is not cached): a test may install the
  // library between two calls, and the message must name what was tried each time.
  static std::mutex mutex;
  static std::unique_ptr<NcclApi> api;
  std::lock_guard lock(mutex);
  if (!api) api = std::make_unique<NcclApi>(load_nccl());
  return *api;
}

void NcclApi::check(ncclResult_t result, const char* call) const {
  if (result == ncclSuccess) return;
  const char* text = ncclGetErrorString != nullptr ? ncclGetErrorString(result) : nullptr;
  throw RuntimeError(std::string("NCCL: ") + call + " failed: " +
                     (text != nullptr ? text : "ncclResult_t " + std::to_string(result)));
}

std::string NcclApi::version() const {
  int code = 0;
  check(ncclGetVersion(&code), "ncclGetVersion");
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

}  // namespace cannl::backends::gpu
