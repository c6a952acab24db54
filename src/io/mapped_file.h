#pragma once
// A read-only memory mapping of a whole file. Pages are read from disk only when touched, which
// is what makes safetensors payloads lazy.
//
//   MappedFile file("model.safetensors");   // throws IoError when it cannot be opened
//   std::span<const std::byte> all = file.bytes();

#include <cstddef>
#include <filesystem>
#include <span>

namespace cannl::io {

class MappedFile {
 public:
  /// Maps `path` read-only (an empty file maps to an empty span). Throws IoError naming the path.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace cannl::io
