// The spellings CUDA and HIP share (cuda_style_dialect.h).
#include "codegen/gpu/cuda_style_dialect.h"

namespace cannl::codegen {

namespace {

const char* const kSlots[3] = {"x", "y", "z"};

}  // namespace

std::set<std::string> CudaStyleDialect::reserved_words() const {
  auto words = GpuDialect::reserved_words();
  for (const char* w : {"blockDim", "gridDim", "warpSize", "half", "dim3", "min", "max", "signed", "unsigned"}) {
    words.insert(w);
  }
  return words;
}

std::string CudaStyleDialect::block_index(int slot) const { return std::string("blockIdx.") + kSlots[slot]; }

std::string CudaStyleDialect::thread_index(int slot) const { return std::string("threadIdx.") + kSlots[slot]; }

std::string CudaStyleDialect::fixed_width_types() {
  return "typedef signed char int8_t;\ntypedef unsigned char uint8_t;\ntypedef short int16_t;\n"
         "typedef unsigned short uint16_t;\ntypedef int int32_t;\ntypedef unsigned int uint32_t;\n"
         "typedef long long int64_t;\ntypedef unsigned long long uint64_t;\n";
}

}  // namespace cannl::codegen
