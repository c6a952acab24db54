#pragma once
// Reading and writing safetensors files (Hugging Face's tensor format): an 8-byte little-endian
// header length N, N bytes of a JSON object mapping tensor names to {dtype, shape, data_offsets}
// (plus an optional "__metadata__" object of string values), then the payloads, contiguous,
// row-major, little-endian, covering the data section exactly.
//
// The reader maps the file and validates the whole header up front; payloads are not touched
// until asked for (pages fault in on access), so opening a multi-gigabyte checkpoint to read one
// tensor is cheap. A file that does not follow the format is a FormatError naming the file and,
// where one is involved, the tensor; never a crash.
//
//   auto file = io::SafetensorsFile::open("model.safetensors");
//   for (const io::TensorInfo& t : file.tensors()) std::cout << t.name << "\n";
//   std::vector<float> wte = file.to_f32("wte.weight");

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cannl/io/safetensors_dtype.h"

namespace cannl::io {

/// One tensor of a file's header. Offsets are relative to the start of the data section.
///   info.shape == {768, 2304}; info.end - info.begin == 768 * 2304 * 4 for F32
struct TensorInfo {
  std::string name;
  SafetensorsDType dtype = SafetensorsDType::F32;
  std::vector<std::int64_t> shape;  // empty = a scalar (one element)
  std::uint64_t begin = 0;
  std::uint64_t end = 0;

  /// The product of the shape (1 for a scalar, 0 when any dimension is 0, whatever the others).
  /// Throws FormatError naming the tensor when it overflows int64 or a dimension is negative,
  /// which a validated header never holds.   TensorInfo{.shape = {3, 1LL << 62, 0}}.num_elements() == 0
  std::int64_t num_elements() const;
};

/// An open, validated safetensors file. Copies share the mapping, which lives as long as any
/// copy (spans returned by raw_bytes stay valid that long).
class SafetensorsFile {
 public:
  /// Maps `path` and validates its header. Throws IoError when the file cannot be opened and
  /// FormatError when it is not a valid safetensors file.
  ///   auto file = SafetensorsFile::open("weights.safetensors");
  static SafetensorsFile open(const std::filesystem::path& path);
  /// Validates an in-memory image of a file (tests, fuzzing, network buffers). `name` is used in
  /// error messages in place of a path.
  ///   auto file = SafetensorsFile::from_bytes(serialize_safetensors(tensors), "<memory>");
  static SafetensorsFile from_bytes(std::string bytes, std::string name);

  /// The path or name given when opened.
  const std::string& name() const;
  /// The tensors in header order.
  const std::vector<TensorInfo>& tensors() const;
  /// The tensor named `name`, or nullptr.
  const TensorInfo* find(std::string_view name) const;
  /// The tensor named `name`; throws FormatError naming the file, the tensor and what it holds.
  const TensorInfo& info(std::string_view name) const;
  /// The "__metadata__" entries (empty when absent).
  const std::map<std::string, std::string>& metadata() const;

  /// The payload exactly as stored (little-endian, row-major), a view into the mapping.
  ///   auto bytes = file.raw_bytes("h.0.ln_1.weight");
  std::span<const std::byte> raw_bytes(std::string_view name) const;
  /// The payload converted to doubles (see decode_to_f64 for exactness).
  std::vector<double> to_f64(std::string_view name) const;
  /// The payload converted to floats: exact for F32 and every 8- and 16-bit dtype, otherwise
  /// rounded once to nearest (see decode_to_f32).
  ///   file.to_f32("bias")  // an F16, BF16, I8, BOOL, F8_E4M3 ... tensor as floats
  std::vector<float> to_f32(std::string_view name) const;

 private:
  struct Impl;
  explicit SafetensorsFile(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

/// One tensor to write. `bytes` must hold num_elements * dtype size bytes, little-endian.
///   TensorToWrite{"w", SafetensorsDType::F32, {2, 3}, std::as_bytes(std::span(six_floats))}
struct TensorToWrite {
  std::string name;
  SafetensorsDType dtype = SafetensorsDType::F32;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> bytes;
};

/// How write_safetensors writes.
struct WriteOptions {
  /// fsync the file's directory too, so the new file survives a power loss (the file's data is
  /// flushed before the rename either way). A directory that cannot be flushed is an IoError;
  /// a file system that does not flush directories at all (EINVAL) is not.
  bool sync_to_disk = true;
  /// Called after each chunk written to the temporary file with the bytes written so far and the
  /// total. An exception it throws aborts the write: the temporary file is removed and the
  /// previous file at the path is left as it was (also how tests simulate an interruption).
  std::function<void(std::uint64_t written, std::uint64_t total)> progress;
};

/// Writes a safetensors file atomically: a temporary file beside `path`, then a rename, so a
/// reader sees the previous file or the new one, never a torn one. Payloads are laid out in the
/// order given; the header is padded with spaces so the data section starts 8-byte aligned.
/// Throws RuntimeUsageError for a bad tensor list (empty, duplicate or reserved names, more than
/// 64 dimensions, a shape whose element or byte count overflows 64 bits, a byte count not
/// matching the shape) before anything is written, and IoError when the file cannot be written.
///   write_safetensors("out.safetensors", tensors, {{"format", "pt"}});
void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata = {},
                       const WriteOptions& options = {});

/// The same file image in memory.
///   std::string image = serialize_safetensors(tensors);
std::string serialize_safetensors(std::span<const TensorToWrite> tensors,
                                  const std::map<std::string, std::string>& metadata = {});

}  // namespace cannl::io
