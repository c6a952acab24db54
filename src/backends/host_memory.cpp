// Host buffers and run-argument checks (see host_memory.h).
#include "backends/host_memory.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "cannl/support/error.h"

namespace cannl::backends {

namespace {
// A cache line; also the widest vector register, so generated loops may use aligned loads.
constexpr std::size_t kAlignment = 64;
}  // namespace

CpuBuffer::CpuBuffer(std::size_t bytes) : size_(bytes) {
  // aligned_alloc needs a multiple of the alignment; never zero so host_data() is never null.
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  data_ = static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded));
  if (data_ == nullptr) throw std::bad_alloc();
  std::memset(data_, 0, rounded == 0 ? kAlignment : rounded);
}

CpuBuffer::~CpuBuffer() { std::free(data_); }

void CpuBuffer::read(std::span<std::byte> out) const {
  if (out.size() != size_) {
    throw RuntimeUsageError("buffer read: destination has " + std::to_string(out.size()) +
                            " bytes but the buffer has " + std::to_string(size_));
  }
  if (size_ != 0) std::memcpy(out.data(), data_, size_);
}

void CpuBuffer::write(std::span<const std::byte> in) {
  if (in.size() != size_) {
    throw RuntimeUsageError("buffer write: source has " + std::to_string(in.size()) +
                            " bytes but the buffer has " + std::to_string(size_));
  }
  if (size_ != 0) std::memcpy(data_, in.data(), size_);
}

std::vector<std::byte*> host_pointers(const CompileRequest& request,
                                      std::span<Buffer* const> buffers,
                                      std::span<const std::int64_t> static_values) {
  check_run_arguments(request, buffers, static_values);
  std::vector<std::byte*> out;
  for (std::size_t k = 0; k < buffers.size(); ++k) {
    if (buffers[k]->host_data() == nullptr) {
      throw RuntimeUsageError("routine " + request.routine.name + ": the buffer of node " +
                              request.params[k]->debug_name() + " is not host memory");
    }
    out.push_back(buffers[k]->host_data());
  }
  return out;
}

}  // namespace cannl::backends
