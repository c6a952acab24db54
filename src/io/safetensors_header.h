#pragma once
// Parsing and validation of a safetensors header against the bytes of the whole file.
//
//   ParsedHeader header = parse_safetensors_header(file_bytes, "model.safetensors");
//   header.data_start == 8 + header length

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

struct ParsedHeader {
  std::vector<TensorInfo> tensors;  // header order
  std::map<std::string, std::string> metadata;
  std::uint64_t data_start = 0;     // file offset of the data section
};

/// Validates everything the format requires: the header length fits the file, the header is a
/// JSON object, every tensor has a known dtype, a shape and two offsets, its byte range matches
/// its shape, and the ranges tile the data section exactly (no overlap, gap or trailing bytes).
/// Throws FormatError("<file_name>: ...") naming the tensor when one is at fault.
ParsedHeader parse_safetensors_header(std::span<const std::byte> file, std::string_view file_name);

}  // namespace cannl::io
