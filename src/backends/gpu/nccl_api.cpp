// NCCL loaded at run time (see nccl_api.h).
#include "backends/gpu/nccl_api.h"

#include <map>
#include <memory>
#include <mutex>

#include "backends/gpu/api_library.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::backends::gpu {

namespace {
constexpr int kFirstWithAverage = 21000;  // 2.10.0 as ncclGetVersion encodes it
}  // namespace

std::vector<std::string> nccl_candidates() { return cuda_toolkit_candidates({"libnccl.so.2", "libnccl.so"}); }

NcclApi NcclApi::load(const std::vector<std::string>& candidates) {
  const ApiLibrary lib(candidates, "NCCL (collectives between NVIDIA GPUs)");
  NcclApi api;
  lib.bind(api.ncclGetVersion, "ncclGetVersion");
  lib.bind(api.ncclGetErrorString, "ncclGetErrorString");
  lib.bind(api.ncclGetUniqueId, "ncclGetUniqueId");
  lib.bind(api.ncclCommInitRank, "ncclCommInitRank");
  lib.bind(api.ncclCommInitAll, "ncclCommInitAll");
  lib.bind(api.ncclGroupStart, "ncclGroupStart");
  lib.bind(api.ncclGroupEnd, "ncclGroupEnd");
  lib.bind(api.ncclCommDestroy, "ncclCommDestroy");
  lib.bind(api.ncclCommAbort, "ncclCommAbort");
  lib.bind(api.ncclCommGetAsyncError, "ncclCommGetAsyncError");
  lib.bind(api.ncclAllReduce, "ncclAllReduce");
  api.library = lib.path();
  // ncclAvg, which data-parallel training averages with, came in 2.10; an older NCCL would
  // reject the first all-reduce of a run.
  int code = 0;
  if (api.ncclGetVersion(&code) != ncclSuccess || code < kFirstWithAverage)
    throw BackendUnavailable("NCCL in " + api.library + " is version " + (code > 0 ? api.version() : "unknown") +
                             "; cannl needs 2.10 or later (ncclAvg)");
  return api;
}

const NcclApi& NcclApi::get() {
  // A failed load is retried on the next call (the error is not cached): a test may install the
  // library between two calls, and the message must name what was tried each time.
  // Never freed: communicators use the table until they go.
  // The map is never destroyed either: at exit its tables stay reachable (no destructor runs
  // while communicators may still use them).
  static std::mutex mutex;
  static auto* loaded = new std::map<std::string, const NcclApi*>();
  const std::string configured = config::get("nccl_library");
  std::lock_guard lock(mutex);
  auto& api = (*loaded)[configured];
  if (api == nullptr) api = new NcclApi(load(configured.empty() ? nccl_candidates() : std::vector{configured}));
  return *api;
}

void NcclApi::check(ncclResult_t result, const char* call, const std::string& context) const {
  if (result == ncclSuccess) return;
  const char* text = ncclGetErrorString != nullptr ? ncclGetErrorString(result) : nullptr;
  throw DistributedError(std::string("NCCL: ") + call + " failed: " +
                         (text != nullptr ? text : "ncclResult_t " + std::to_string(result)) +
                         (context.empty() ? "" : "; " + context));
}

std::string NcclApi::version() const {
  int code = 0;
  check(ncclGetVersion(&code), "ncclGetVersion");
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

}  // namespace cannl::backends::gpu
