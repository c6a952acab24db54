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

/// An error of the header's own rules (not of its JSON), which the JSON errors' translation
/// (read_json) passes on untouched.
class HeaderError : public FormatError {
 public:
  using FormatError::FormatError;
};

/// Errors of one file; `tensor` names the culprit when there is one.
struct Complaint {
  std::string_view file_name;

  [[noreturn]] void fail(const std::string& what) const {
    throw HeaderError(std::string(file_name) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    fail("tensor " + json::quote(tensor) + ": " + what);
  }
};

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

/// Runs `read` (reading the header's JSON) with the reader's errors said in the header's terms.
template <typename Read>
void read_json(const Complaint& c, Read read) {
  try {
    read();
  } catch (const HeaderError&) {
    throw;
  } catch (const json::LimitError& e) {
    complain_about_limit(e, c);
  } catch (const FormatError& e) {
    c.fail(std::string("header: ") + e.what());
  }
}

json::Reader header_reader(std::string_view text) {
  return json::Reader(text, {.max_values = kMaxSafetensorsHeaderValues, .max_array_items = kMaxSafetensorsRank});
}

/// Whether the object the reader is at names all three members of a tensor entry; read through.
bool reads_as_tensor_entry(json::Reader& r) {
  if (r.peek() != json::Kind::Object) {
    r.skip();
    return false;
  }
  r.begin_object();
  int members = 0;
  std::string key;
  while (r.next_member(key)) {
    members += key == "dtype" || key == "shape" || key == "data_offsets";
    r.skip();
  }
  return members >= 3;
}

/// The first reading: checks the header's JSON and its limits and counts the entries that can be
/// tensors (each at least 6 values), keeping nothing. A header past the limits costs no memory.
std::size_t count_tensor_entries(std::string_view text, const Complaint& c) {
  std::size_t count = 0;
  read_json(c, [&] {
    json::Reader r = header_reader(text);
    if (r.peek() != json::Kind::Object) c.fail("header is not a JSON object");
    r.begin_object();
    std::string key;
    while (r.next_member(key)) count += reads_as_tensor_entry(r) && key != "__metadata__";
    r.finish();
  });
  return count;
}

std::map<std::string, std::string> read_metadata(json::Reader& r, const Complaint& c) {
  if (r.peek() != json::Kind::Object) c.fail("__metadata__ must be an object of strings");
  std::map<std::string, std::string> metadata;
  r.begin_object();
  std::string key;
  while (r.next_member(key)) {
    if (metadata.contains(key)) r.fail_at(r.key_offset(), "duplicate key " + json::quote(key));
    if (r.peek() != json::Kind::String) c.fail("__metadata__ entry " + json::quote(key) + " is not a string");
    if (metadata.size() == kMaxSafetensorsMetadataEntries)
      c.fail("__metadata__ holds more than " + std::to_string(kMaxSafetensorsMetadataEntries) +
             " entries, the most cannl reads (at byte " + std::to_string(r.key_offset()) + " of the header)");
    std::string value = r.read_string();
    metadata.emplace(std::move(key), std::move(value));
  }
  return metadata;
}

std::uint64_t unsigned_number(json::Reader& r, const std::string& name, std::string_view what,
                              const Complaint& c) {
  if (r.peek() != json::Kind::Number) c.fail(name, std::string(what) + " is not a number");
  const std::string_view literal = r.read_number();
  const std::optional<std::uint64_t> number = json::uint64_literal(literal);
  if (!number)
    c.fail(name, std::string(what) + " " + std::string(literal) + " is not a non-negative 64-bit integer");
  return *number;
}

/// The shape's dimensions (the reader's array limit refuses more than kMaxSafetensorsRank).
std::vector<std::int64_t> read_shape(json::Reader& r, const std::string& name, const Complaint& c) {
  std::vector<std::int64_t> dims;
  r.begin_array();
  while (r.next_item()) {
    const std::uint64_t dim = unsigned_number(r, name, "shape entry", c);
    if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      c.fail(name, "shape entry " + std::to_string(dim) + " is too large");
    dims.push_back(static_cast<std::int64_t>(dim));
  }
  dims.shrink_to_fit();  // grown by doubling: a [1, 1, 1, 1, 1] shape would keep room for 8
  return dims;
}

void read_offsets(json::Reader& r, TensorInfo& info, const Complaint& c) {
  std::uint64_t offsets[2] = {0, 0};
  int count = 0;
  r.begin_array();
  while (r.next_item()) {
    if (count == 2) c.fail(info.name, "data_offsets must be [begin, end]");
    offsets[count++] = unsigned_number(r, info.name, "data offset", c);
  }
  if (count != 2) c.fail(info.name, "data_offsets must be [begin, end]");
  info.begin = offsets[0];
  info.end = offsets[1];
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

/// The entry's byte range against its shape and dtype.
void check_payload(const TensorInfo& info, const std::string& dtype_name, const Complaint& c) {
  if (info.end < info.begin)
    c.fail(info.name, "data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
                          "] end before they begin");
  const std::uint64_t expected = payload_bytes(info, c);
  if (info.end - info.begin != expected)
    c.fail(info.name, "data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
                          "] span " + std::to_string(info.end - info.begin) + " bytes but shape " +
                          shape_string(info.shape) + " of " + dtype_name + " needs " + std::to_string(expected));
}

/// Member `key` of a tensor entry, read once: a second one is a duplicate key, a value of another
/// JSON type than `kind` is an error naming the member.
void expect_member(json::Reader& r, const std::string& key, json::Kind kind, bool& seen, const std::string& name,
                   const Complaint& c) {
  if (seen) r.fail_at(r.key_offset(), "duplicate key " + json::quote(key));
  seen = true;
  if (r.peek() != kind) c.fail(name, "\"" + key + "\" has the wrong JSON type");
}

/// The entry of tensor `info.name` into `info`; its other members are read through and ignored.
void read_tensor(json::Reader& r, TensorInfo& info, const Complaint& c) {
  const std::string& name = info.name;
  if (r.peek() != json::Kind::Object) c.fail(name, "entry is not a JSON object");
  bool has_dtype = false, has_shape = false, has_offsets = false;
  std::string dtype_name, key;
  r.begin_object();
  while (r.next_member(key)) {
    if (key == "dtype") {
      expect_member(r, key, json::Kind::String, has_dtype, name, c);
      dtype_name = r.read_string();
      const std::optional<SafetensorsDType> dtype = safetensors_dtype_from_name(dtype_name);
      if (!dtype) c.fail(name, "unknown dtype " + json::quote(dtype_name));
      info.dtype = *dtype;
    } else if (key == "shape") {
      expect_member(r, key, json::Kind::Array, has_shape, name, c);
      info.shape = read_shape(r, name, c);
    } else if (key == "data_offsets") {
      expect_member(r, key, json::Kind::Array, has_offsets, name, c);
      read_offsets(r, info, c);
    } else {
      r.skip();
    }
  }
  for (auto [has, what] : {std::pair{has_dtype, "dtype"}, {has_shape, "shape"}, {has_offsets, "data_offsets"}})
    if (!has) c.fail(name, "missing \"" + std::string(what) + "\"");
  check_payload(info, dtype_name, c);
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

/// The second reading: the tensors, metadata and index the header holds (its JSON and limits
/// known to hold by the first).
void read_header(std::string_view text, std::size_t tensor_entries, ParsedHeader& header, const Complaint& c) {
  header.tensors.reserve(tensor_entries);
  header.index.reserve(tensor_entries);
  read_json(c, [&] {
    json::Reader r = header_reader(text);
    bool has_metadata = false;
    std::string key;
    r.begin_object();
    while (r.next_member(key)) {
      if (key == "__metadata__") {
        if (std::exchange(has_metadata, true)) r.fail_at(r.key_offset(), "duplicate key " + json::quote(key));
        header.metadata = read_metadata(r, c);
        continue;
      }
      header.tensors.push_back(TensorInfo{.name = key});
      if (!header.index.insert(header.tensors, header.tensors.size() - 1))
        r.fail_at(r.key_offset(), "duplicate key " + json::quote(key));
      read_tensor(r, header.tensors.back(), c);
    }
    r.finish();
  });
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
  const std::size_t tensor_entries = count_tensor_entries(text, c);
  ParsedHeader header;
  header.data_start = 8 + header_length;
  read_header(text, tensor_entries, header, c);
  check_coverage(header.tensors, file.size() - header.data_start, c);
  return header;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace cannl::io
