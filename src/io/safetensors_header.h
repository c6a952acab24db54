#pragma once
// Parsing and validation of a safetensors header against the bytes of the whole file. The header
// is read twice with json::Reader and never built as a document: once to check its JSON and its
// limits and to count its tensors, keeping nothing; then into the tensor list, sized once.
//
//   ParsedHeader header = parse_safetensors_header(file_bytes, "model.safetensors");
//   header.data_start == 8 + header length

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cannl/io/safetensors.h"
#include "io/tensor_index.h"

namespace cannl::io {

/// Headers larger than this are refused (the reference implementation's limit too): a lying
/// length must not make the reader allocate gigabytes.
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;
/// The most dimensions a tensor may have (NumPy 2's limit too).
inline constexpr std::size_t kMaxSafetensorsRank = 64;
/// The most JSON values a header may hold; a tensor takes about 10, so this allows 200,000
/// tensors in one file (the largest checkpoints hold some thousands per file). Counted while the
/// header is first read through, keeping nothing, so a header past it costs no memory. Within it
/// what the parse keeps is what the file says (a TensorInfo per tensor, 8 bytes a dimension, the
/// names and metadata strings once, an index slot of 4 bytes at most half full): measured on
/// the largest headers within this limit (tests/tools/safetensors_header_memory), 40 MB for
/// 285,000 tensors of one dimension, beside the bytes of their names and strings.
inline constexpr std::size_t kMaxSafetensorsHeaderValues = 2'000'000;
/// The most entries __metadata__ may hold: each costs a node of std::map (about 100 bytes) for as
/// few as 7 bytes of header. Files hold a handful ({"format": "pt"}).
inline constexpr std::size_t kMaxSafetensorsMetadataEntries = 65'536;

struct ParsedHeader {
  std::vector<TensorInfo> tensors;  // header order
  TensorIndex index;                // into `tensors`, by name
  std::map<std::string, std::string> metadata;
  std::uint64_t data_start = 0;     // file offset of the data section
};

/// Validates everything the format requires: the header length fits the file, the header is a
/// JSON object within the limits above, no key is given twice, every tensor has a known dtype, a shape and two offsets,
/// its element and byte counts fit 63 and 64 bits, its byte range matches its shape, and the
/// ranges tile the data section exactly (no overlap, gap or trailing bytes).
/// Throws FormatError("<file_name>: ...") naming the tensor when one is at fault.
ParsedHeader parse_safetensors_header(std::span<const std::byte> file, std::string_view file_name);

/// A shape as messages print it: shape_string({2, 3}) == "[2, 3]".
std::string shape_string(const std::vector<std::int64_t>& shape);

}  // namespace cannl::io
