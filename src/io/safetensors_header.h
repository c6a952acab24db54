#pragma once
// Parsing and validation of a safetensors header against the bytes of the whole file.
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

namespace cannl::io {

/// Headers larger than this are refused (the reference implementation's limit too): a lying
/// length must not make the reader allocate gigabytes.
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;
/// The most dimensions a tensor may have (NumPy 2's limit too). With the next limit it keeps a
/// header within its byte limit from costing gigabytes once parsed: each JSON value takes about
/// 90 bytes of memory, a shape entry "0," two bytes of header.
inline constexpr std::size_t kMaxSafetensorsRank = 64;
/// The most JSON values a header may hold. A tensor takes about 10, so this allows 200,000
/// tensors in one file (the largest checkpoints hold some thousands per file), and a header
/// parses into at most about 300 MB (measured: 4 million values took 600 MB).
inline constexpr std::size_t kMaxSafetensorsHeaderValues = 2'000'000;

struct ParsedHeader {
  std::vector<TensorInfo> tensors;  // header order
  std::map<std::string, std::string> metadata;
  std::uint64_t data_start = 0;     // file offset of the data section
};

/// Validates everything the format requires: the header length fits the file, the header is a
/// JSON object within the limits above, every tensor has a known dtype, a shape and two offsets,
/// its element and byte counts fit 63 and 64 bits, its byte range matches its shape, and the
/// ranges tile the data section exactly (no overlap, gap or trailing bytes).
/// Throws FormatError("<file_name>: ...") naming the tensor when one is at fault.
ParsedHeader parse_safetensors_header(std::span<const std::byte> file, std::string_view file_name);

/// A shape as messages print it: shape_string({2, 3}) == "[2, 3]".
std::string shape_string(const std::vector<std::int64_t>& shape);

}  // namespace cannl::io
