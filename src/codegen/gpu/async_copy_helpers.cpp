// The asynchronous-copy helpers of the CUDA and OpenCL dialects (async_copy_helpers.h).
#include "codegen/gpu/async_copy_helpers.h"

#include <string>

#include "codegen/gpu/inline_ptx.h"

namespace cannl::codegen {

namespace {

// cp.async of `bytes` (4: .ca, the only form for 4 bytes; 16: .cg, which bypasses L1: the
// slice is read once from shared memory). Volatile with a memory clobber, so that it stays
// between the waits and barriers around it.
std::string cuda_copy(const std::string& name, int bytes) {
  return device_only("$P void " + name + "(float* dst, const float* src, int src_bytes) {\n"
         "  const unsigned address = (unsigned)__cvta_generic_to_shared(dst);\n"
         "  asm volatile(\"cp.async." + std::string(bytes == 16 ? "cg" : "ca") + ".shared.global [%0], [%1], " +
         std::to_string(bytes) + ", %2;\"\n"
         "               :: \"r\"(address), \"l\"(src), \"r\"(src_bytes) : \"memory\");\n"
         "}\n");
}

// The emulation's queue of one thread's copies in flight (a private variable of the tile, passed
// to every helper: OpenCL functions keep no state of their own).
constexpr const char* kEmulatedQueue = R"(/* This thread's emulated cp.async copies in flight (tests on OpenCL). */
typedef struct {
  __local float* dst[CANNL_CP_QUEUE];
  __global const float* src[CANNL_CP_QUEUE];
  int cells[CANNL_CP_QUEUE], src_bytes[CANNL_CP_QUEUE];
  int n;
} cannl_cp_queue;
)";

constexpr const char* kEmulatedCopy = R"(/* Emulated cp.async (tests on OpenCL): the copy waits in this thread's queue until the thread
   waits for it, so a read of a slice before its wait (or by another thread before the barrier
   after it) sees stale cells. */
$P void cannl_cp_async_enqueue(__local float* dst, __global const float* src, int cells, int src_bytes, cannl_cp_queue* q) {
  if (q->n == CANNL_CP_QUEUE) return; /* more in flight than the tile waits for: lost, and the test fails */
  q->dst[q->n] = dst;
  q->src[q->n] = src;
  q->cells[q->n] = cells;
  q->src_bytes[q->n] = src_bytes;
  q->n += 1;
}
$P void cannl_cp_async16(__local float* dst, __global const float* src, int src_bytes, cannl_cp_queue* q) {
  cannl_cp_async_enqueue(dst, src, 4, src_bytes, q);
}
$P void cannl_cp_async4(__local float* dst, __global const float* src, int src_bytes, cannl_cp_queue* q) {
  cannl_cp_async_enqueue(dst, src, 1, src_bytes, q);
}
/* Every queued copy, the bytes past src_bytes zero; NaN from a 16-byte copy whose addresses are
   not 16-byte aligned (the device would fault). */
$P void cannl_cp_async_wait_all(cannl_cp_queue* q) {
  for (int c = 0; c < q->n; ++c) {
    const int misaligned = q->cells[c] == 4 && (((size_t)q->dst[c] | (size_t)q->src[c]) & 15) != 0;
    for (int e = 0; e < q->cells[c]; ++e) q->dst[c][e] = misaligned ? NAN : 4 * e < q->src_bytes[c] ? q->src[c][e] : 0.0f;
  }
  q->n = 0;
}
)";

}  // namespace

void append_cuda_async_copy_helpers(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_cp_async16", cuda_copy("cannl_cp_async16", 16), {}});
  out.push_back({"cannl_cp_async4", cuda_copy("cannl_cp_async4", 4), {}});
  out.push_back({"cannl_cp_async_commit", device_only("$P void cannl_cp_async_commit(void) { asm volatile(\"cp.async.commit_group;\" ::: \"memory\"); }\n"), {}});
  // wait_all (a commit, then wait_group 0), not wait_group 0 alone, which leaves copies issued
  // since the last commit in flight: the wait covers every copy whatever the commits before it.
  out.push_back({"cannl_cp_async_wait_all", device_only("$P void cannl_cp_async_wait_all(void) { asm volatile(\"cp.async.wait_all;\" ::: \"memory\"); }\n"), {}});
}

void append_opencl_async_copy_emulation(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_cp_queue", "#define CANNL_CP_QUEUE " + std::to_string(kOpenClAsyncQueue) + "\n" + kEmulatedQueue, {}});
  out.push_back({"cannl_cp_async_enqueue", kEmulatedCopy, {"cannl_cp_queue"}});
  for (const char* name : {"cannl_cp_async16", "cannl_cp_async4", "cannl_cp_async_wait_all"})
    out.push_back({name, "", {"cannl_cp_async_enqueue"}});
  // The copies wait in the queue: a group needs no mark (the tiles wait for all of them).
  out.push_back({"cannl_cp_async_commit", "$P void cannl_cp_async_commit(void) {}\n", {}});
}

}  // namespace cannl::codegen
