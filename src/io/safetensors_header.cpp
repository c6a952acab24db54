// Safetensors header validation. The rules are the format's (Hugging Face safetensors
// specification): offsets are relative to the data section, sorted by offset the tensors must
// cover it contiguously from 0 to its end, and each range must be exactly shape x dtype size.
#include "io/safetensors_header.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "cannl/support/checked.h"
#include "cannl/support/error.h"
#include "io/json.h"

namespace cannl::io {
namespace {

/// Errors of one file; `tensor` names the culprit when there is one.
struct Complaint {
  std::string_view file_name;

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(std::string(file_name) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    fail("tensor " + json::quote(tensor) + ": " + what);
  }
};

std::map<std::string, std::string> parse_metadata(const json::Value& value, const Complaint& c) {
  if (value.kind != json::Kind::Object) c.fail("__metadata__ must be an object of strings");
  std::map<std::string, std::string> metadata;
  for (std::size_t i = 0; i < value.keys.size(); ++i) {
    if (value.items[i].kind != json::Kind::String)
      c.fail("__metadata__ entry " + json::quote(value.keys[i]) + " is not a string");
    metadata.emplace(value.keys[i], value.items[i].text);
  }
  return metadata;
}

const json::Value& member(const json::Value& entry, std::string_view key, json::Kind kind,
                          const std::string& name, const Complaint& c) {
  const json::Value* value = entry.find(key);
  if (value == nullptr) c.fail(name, "missing \"" + std::string(key) + "\"");
  if (value->kind != kind) c.fail(name, "\"" + std::string(key) + "\" has the wrong JSON type");
  return *value;
}

std::uint64_t unsigned_number(const json::Value& value, const std::string& name,
                              std::string_view what, const Complaint& c) {
  std::optional<std::uint64_t> number = value.as_uint64();
  if (!number) c.fail(name, std::string(what) + " " + value.text + " is not a non-negative 64-bit integer");
  return *number;
}

std::vector<std::int64_t> parse_shape(const json::Value& shape, const std::string& name,
                                      const Complaint& c) {
  // The parser's array limit has refused longer shapes already; kept here with the other rules.
  if (shape.items.size() > kMaxSafetensorsRank)
    c.fail(name, "shape has " + std::to_string(shape.items.size()) + " dimensions, more than " +
                     std::to_string(kMaxSafetensorsRank));
  std::vector<std::int64_t> dims;
  for (const json::Value& item : shape.items) {
    std::uint64_t dim = unsigned_number(item, name, "shape entry", c);
    if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      c.fail(name, "shape entry " + item.text + " is too large");
    dims.push_back(static_cast<std::int64_t>(dim));
  }
  return dims;
}

/// shape x element size, or a complaint when the element count leaves int64 (the type of
/// TensorInfo::num_elements) or the byte count 64 bits. As checked_product counts, a zero
/// dimension makes the tensor empty whatever the others: [3, 2^62, 0] holds 0 elements.
std::uint64_t payload_bytes(const TensorInfo& info, const Complaint& c) {
  const std::optional<std::int64_t> elements = checked_product(info.shape);
  if (!elements)
    c.fail(info.name, "shape " + shape_string(info.shape) + " overflows 64-bit element counts");
  const auto count = static_cast<std::uint64_t>(*elements);
  const std::uint64_t element_bytes = safetensors_dtype_bytes(info.dtype);
  if (count > std::numeric_limits<std::uint64_t>::max() / element_bytes)
    c.fail(info.name, "shape " + shape_string(info.shape) + " overflows 64-bit byte counts");
  return count * element_bytes;
}

TensorInfo parse_tensor(const std::string& name, const json::Value& entry, const Complaint& c) {
  if (entry.kind != json::Kind::Object) c.fail(name, "entry is not a JSON object");
  TensorInfo info{.name = name};
  const std::string& dtype_name = member(entry, "dtype", json::Kind::String, name, c).text;
  std::optional<SafetensorsDType> dtype = safetensors_dtype_from_name(dtype_name);
  if (!dtype) c.fail(name, "unknown dtype " + json::quote(dtype_name));
  info.dtype = *dtype;
  info.shape = parse_shape(member(entry, "shape", json::Kind::Array, name, c), name, c);
  const json::Value& offsets = member(entry, "data_offsets", json::Kind::Array, name, c);
  if (offsets.items.size() != 2) c.fail(name, "data_offsets must be [begin, end]");
  info.begin = unsigned_number(offsets.items[0], name, "data offset", c);
  info.end = unsigned_number(offsets.items[1], name, "data offset", c);
  if (info.end < info.begin)
    c.fail(name, "data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
                     "] end before they begin");
  std::uint64_t expected = payload_bytes(info, c);
  if (info.end - info.begin != expected)
    c.fail(name, "data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
                     "] span " + std::to_string(info.end - info.begin) + " bytes but shape " +
                     shape_string(info.shape) + " of " + dtype_name + " needs " +
                     std::to_string(expected));
  return info;
}

/// Sorted by offset, the ranges must tile [0, data_size) exactly.
void check_coverage(const std::vector<TensorInfo>& tensors, std::uint64_t data_size,
                    const Complaint& c) {
  std::vector<const TensorInfo*> order;
  for (const TensorInfo& t : tensors) {
    if (t.end > data_size)
      c.fail(t.name, "data_offsets end at " + std::to_string(t.end) +
                         ", past the end of the data section (" + std::to_string(data_size) +
                         " bytes): the file is truncated or the header lies");
    order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::uint64_t covered = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo* t : order) {
    if (t->begin < covered)
      c.fail(t->name, "data_offsets overlap those of " + json::quote(previous->name));
    if (t->begin > covered)
      c.fail(t->name, "leaves a gap: its data begins at " + std::to_string(t->begin) +
                          " but the bytes before end at " + std::to_string(covered));
    covered = t->end;
    previous = t;
  }
  if (covered != data_size)
    c.fail(std::to_string(data_size - covered) + " bytes after the last tensor's data are not "
           "covered by any tensor");
}

/// A header that went past a parse limit, in the header's terms: which tensor's member is too long.
[[noreturn]] void complain_about_limit(const json::LimitError& e, const Complaint& c) {
  const std::vector<std::string>& path = e.path;
  const bool in_tensor = !path.empty() && path[0] != "__metadata__";
  if (e.limit == json::LimitError::Limit::ArrayItems && in_tensor) {
    const std::string what = path.size() >= 2 ? "\"" + path[1] + "\"" : "its entry";
    c.fail(path[0], what + " has more than " + std::to_string(kMaxSafetensorsRank) +
                        " entries (at byte " + std::to_string(e.offset) +
                        " of the header): a tensor has at most " +
                        std::to_string(kMaxSafetensorsRank) + " dimensions");
  }
  if (e.limit == json::LimitError::Limit::Values)
    c.fail("header holds more than " + std::to_string(kMaxSafetensorsHeaderValues) +
           " JSON values, the most cannl reads (reached at byte " + std::to_string(e.offset) +
           (in_tensor ? ", in tensor " + json::quote(path[0]) : std::string()) + ")");
  c.fail(std::string("header: ") + e.what());
}

/// The header's JSON, parsed within limits that keep its memory a small multiple of its size.
json::Value parse_header_json(std::string_view text, const Complaint& c) {
  const json::Limits limits{.max_values = kMaxSafetensorsHeaderValues,
                            .max_array_items = kMaxSafetensorsRank};
  try {
    return json::parse(text, limits);
  } catch (const json::LimitError& e) {
    complain_about_limit(e, c);
  } catch (const FormatError& e) {
    c.fail(std::string("header: ") + e.what());
  }
}

}  // namespace

ParsedHeader parse_safetensors_header(std::span<const std::byte> file, std::string_view file_name) {
  const Complaint c{file_name};
  if (file.size() < 8)
    c.fail("the file is " + std::to_string(file.size()) +
           " bytes, shorter than the 8-byte header length: not a safetensors file");
  std::uint64_t header_length = 0;
  std::memcpy(&header_length, file.data(), 8);  // little-endian host (see safetensors_dtype.cpp)
  if (header_length > file.size() - 8)
    c.fail("header length " + std::to_string(header_length) + " runs past the end of the file (" +
           std::to_string(file.size()) + " bytes): truncated or not a safetensors file");
  if (header_length > kMaxSafetensorsHeaderBytes)
    c.fail("header length " + std::to_string(header_length) + " exceeds the limit of " +
           std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, header_length);
  const json::Value root = parse_header_json(text, c);
  if (root.kind != json::Kind::Object) c.fail("header is not a JSON object");
  ParsedHeader header;
  header.data_start = 8 + header_length;
  for (std::size_t i = 0; i < root.keys.size(); ++i) {
    if (root.keys[i] == "__metadata__") {
      header.metadata = parse_metadata(root.items[i], c);
    } else {
      header.tensors.push_back(parse_tensor(root.keys[i], root.items[i], c));
    }
  }
  check_coverage(header.tensors, file.size() - header.data_start, c);
  return header;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace cannl::io
