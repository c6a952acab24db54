// The asynchronous-copy helpers of the CUDA and OpenCL dialects (async_copy_helpers.h).
#include "codegen/gpu/async_copy_helpers.h"

#include <string>

namespace cannl::codegen {

namespace {

// cp.async of `bytes` (4: .ca, the only form for 4 bytes; 16: .cg, which bypasses L1: the
// slice is read once from shared memory). Volatile with a memory clobber, so that it stays
// between the waits and barriers around it.
std::string cuda_copy(const std::string& name, int bytes) {
  return "$P void " + name + "(float* dst, const float* src, int src_bytes) {\n"
         "  const unsigned address = (unsigned)__cvta_generic_to_shared(dst);\n"
         "  asm volatile(\"cp.async." + std::string(bytes == 16 ? "cg" : "ca") + ".shared.global [%0], [%1], " +
         std::to_string(bytes) + ", %2;\"\n"
         "               :: \"r\"(address), \"l\"(src), \"r\"(src_bytes) : \"memory\");\n"
         "}\n";
}

constexpr const char* kEmulatedCopy16 = R"(/* Emulated cp.async of 16 bytes (tests on OpenCL): synchronous, the bytes past src_bytes zero; NaN where an address is not 16-byte aligned (the device would fault). */
$P void cannl_cp_async16(__local float* dst, __global const float* src, int src_bytes) {
  const int misaligned = (((size_t)dst | (size_t)src) & 15) != 0;
  for (int q = 0; q < 4; ++q) dst[q] = misaligned ? NAN : 4 * q < src_bytes ? src[q] : 0.0f;
}
)";

constexpr const char* kEmulatedCopy4 = R"(/* Emulated cp.async of 4 bytes (tests on OpenCL): synchronous, 0 when src_bytes is 0. */
$P void cannl_cp_async4(__local float* dst, __global const float* src, int src_bytes) {
  *dst = src_bytes >= 4 ? *src : 0.0f;
}
)";

}  // namespace

void append_cuda_async_copy_helpers(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_cp_async16", cuda_copy("cannl_cp_async16", 16), {}});
  out.push_back({"cannl_cp_async4", cuda_copy("cannl_cp_async4", 4), {}});
  out.push_back({"cannl_cp_async_commit", "$P void cannl_cp_async_commit(void) { asm volatile(\"cp.async.commit_group;\" ::: \"memory\"); }\n", {}});
  out.push_back({"cannl_cp_async_wait_all", "$P void cannl_cp_async_wait_all(void) { asm volatile(\"cp.async.wait_group 0;\" ::: \"memory\"); }\n", {}});
}

void append_opencl_async_copy_emulation(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_cp_async16", kEmulatedCopy16, {}});
  out.push_back({"cannl_cp_async4", kEmulatedCopy4, {}});
  // The copies are done when issued: nothing is in flight to commit or wait for.
  out.push_back({"cannl_cp_async_commit", "$P void cannl_cp_async_commit(void) {}\n", {}});
  out.push_back({"cannl_cp_async_wait_all", "$P void cannl_cp_async_wait_all(void) {}\n", {}});
}

}  // namespace cannl::codegen
