// Safetensors writer: validates the tensor list, builds the header (data section 8-byte aligned,
// as the reference implementation does), and streams header and payloads through an AtomicFile.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>

#include "cannl/io/safetensors.h"
#include "cannl/support/checked.h"
#include "cannl/support/atomic_file.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "io/json.h"
#include "io/safetensors_header.h"

namespace cannl::io {
namespace {

constexpr std::size_t kChunkBytes = 1 << 20;

/// The payload size the shape and dtype call for. Checked: a wrapped product could match a short
/// payload and replace the user's file with one the reader refuses.
std::uint64_t expected_bytes(const TensorToWrite& tensor) {
  const std::string what = "safetensors tensor " + json::quote(tensor.name);
  for (std::int64_t dim : tensor.shape) {
    if (dim < 0) throw RuntimeUsageError(what + " has a negative dimension " + std::to_string(dim));
  }
  if (tensor.shape.size() > kMaxSafetensorsRank)
    throw RuntimeUsageError(what + " has " + std::to_string(tensor.shape.size()) +
                            " dimensions; a safetensors file cannl reads holds at most " +
                            std::to_string(kMaxSafetensorsRank));
  const std::optional<std::int64_t> elements = checked_product(tensor.shape);
  const std::uint64_t element_bytes = safetensors_dtype_bytes(tensor.dtype);
  if (!elements || static_cast<std::uint64_t>(*elements) > UINT64_MAX / element_bytes)
    throw RuntimeUsageError(what + ": shape " + shape_string(tensor.shape) + " of " +
                            std::string(safetensors_dtype_name(tensor.dtype)) +
                            " overflows 64-bit element or byte counts");
  return static_cast<std::uint64_t>(*elements) * element_bytes;
}

void check_tensor(const TensorToWrite& tensor, std::set<std::string_view>& seen) {
  if (tensor.name.empty() || tensor.name == "__metadata__" || !json::is_valid_utf8(tensor.name))
    throw RuntimeUsageError("safetensors tensor name " + json::quote(tensor.name) +
                            " is invalid: names must be non-empty UTF-8 and not \"__metadata__\"");
  if (!seen.insert(tensor.name).second)
    throw RuntimeUsageError("safetensors tensor name " + json::quote(tensor.name) +
                            " appears twice");
  const std::uint64_t expected = expected_bytes(tensor);
  if (tensor.bytes.size() != expected)
    throw RuntimeUsageError("safetensors tensor " + json::quote(tensor.name) + " has " +
                            std::to_string(tensor.bytes.size()) + " bytes but its shape " +
                            shape_string(tensor.shape) + " and " +
                            std::string(safetensors_dtype_name(tensor.dtype)) + " need " +
                            std::to_string(expected));
}

std::string metadata_json(const std::map<std::string, std::string>& metadata) {
  std::string text = "{";
  for (const auto& [key, value] : metadata) {
    if (!json::is_valid_utf8(key) || !json::is_valid_utf8(value))
      throw RuntimeUsageError("safetensors metadata entry " + json::quote(key) +
                              " is not valid UTF-8");
    text += (text.size() > 1 ? "," : "") + json::quote(key) + ":" + json::quote(value);
  }
  return text + "}";
}

std::string tensor_json(const TensorToWrite& tensor, std::uint64_t begin) {
  std::string text = json::quote(tensor.name) + ":{\"dtype\":\"" +
                     std::string(safetensors_dtype_name(tensor.dtype)) + "\",\"shape\":[";
  for (std::size_t i = 0; i < tensor.shape.size(); ++i)
    text += (i ? "," : "") + std::to_string(tensor.shape[i]);
  return text + "],\"data_offsets\":[" + std::to_string(begin) + "," +
         std::to_string(begin + tensor.bytes.size()) + "]}";
}

/// The 8-byte length followed by the header JSON, padded with spaces to a multiple of 8.
std::string header_image(std::span<const TensorToWrite> tensors,
                         const std::map<std::string, std::string>& metadata) {
  std::set<std::string_view> seen;
  std::string header = "{";
  if (!metadata.empty()) header += "\"__metadata__\":" + metadata_json(metadata);
  std::uint64_t offset = 0;
  for (const TensorToWrite& tensor : tensors) {
    check_tensor(tensor, seen);
    header += (header.size() > 1 ? "," : "") + tensor_json(tensor, offset);
    offset += tensor.bytes.size();
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::uint64_t length = header.size();
  std::string image(8, '\0');
  for (int k = 0; k < 8; ++k) image[static_cast<std::size_t>(k)] = static_cast<char>(length >> (8 * k));
  return image + header;
}

std::string_view as_chars(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata,
                       const WriteOptions& options) {
  const std::string head = header_image(tensors, metadata);
  std::uint64_t total = head.size();
  for (const TensorToWrite& tensor : tensors) total += tensor.bytes.size();
  files::AtomicFile out(path);
  // Leftovers of an earlier writer of this file that was killed mid-write (a checkpoint's
  // temporary is as large as the checkpoint); this writer's own is alive and stays.
  const std::filesystem::path directory = out.path().parent_path().empty() ? "." : out.path().parent_path();
  files::remove_stale_temporaries(directory, out.path().filename().string());
  std::uint64_t written = 0;
  auto emit = [&](std::string_view piece) {
    out.write(piece);
    written += piece.size();
    if (options.progress) options.progress(written, total);
  };
  emit(head);
  for (const TensorToWrite& tensor : tensors) {
    for (std::size_t at = 0; at < tensor.bytes.size(); at += kChunkBytes)
      emit(as_chars(tensor.bytes.subspan(at, std::min(kChunkBytes, tensor.bytes.size() - at))));
  }
  // The data is flushed always: after a crash the path holds the old or the complete new file.
  out.commit(options.sync_to_disk ? files::Durability::survives_power_loss : files::Durability::complete_file);
}

std::string serialize_safetensors(std::span<const TensorToWrite> tensors,
                                  const std::map<std::string, std::string>& metadata) {
  std::string image = header_image(tensors, metadata);
  for (const TensorToWrite& tensor : tensors) image += as_chars(tensor.bytes);
  return image;
}

}  // namespace cannl::io
