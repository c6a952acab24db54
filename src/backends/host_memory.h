#pragma once
// Host memory shared by the CPU backends (cc and the interpreter): 64-byte-aligned, zeroed
// buffers, and the argument checks every host Executable::run makes before touching memory.
//
//   CpuBuffer b(256);  b.host_data() != nullptr;  // 256 zero bytes, 64-byte aligned
//   auto ptrs = host_pointers(request, buffers, statics);

#include <cstddef>
#include <span>
#include <vector>

#include "backends/run_arguments.h"
#include "cannl/backends/backend.h"

namespace cannl::backends {

class CpuBuffer final : public Buffer {
 public:
  explicit CpuBuffer(std::size_t bytes);
  ~CpuBuffer() override;
  CpuBuffer(const CpuBuffer&) = delete;
  CpuBuffer& operator=(const CpuBuffer&) = delete;

  std::size_t size() const override { return size_; }
  void read(std::span<std::byte> out) const override;
  void write(std::span<const std::byte> in) override;
  std::byte* host_data() override { return data_; }

 private:
  std::size_t size_;
  std::byte* data_;
};

/// The host storage of each parameter, after checking that `buffers` and `static_values` match
/// `request` (count, host visibility, size, static ranges). Throws RuntimeUsageError naming the
/// routine and the offending node or static otherwise.
std::vector<std::byte*> host_pointers(const CompileRequest& request,
                                      std::span<Buffer* const> buffers,
                                      std::span<const std::int64_t> static_values);

}  // namespace cannl::backends
