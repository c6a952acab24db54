// SafetensorsFile: a validated header over a mapped (or in-memory) file image. Payload bytes are
// only touched by raw_bytes / to_f32 / to_f64, so opening costs the header, not the weights.
#include <algorithm>
#include <memory>
#include <optional>

#include "cannl/io/safetensors.h"
#include "cannl/support/checked.h"
#include "cannl/support/error.h"
#include "io/json.h"
#include "io/mapped_file.h"
#include "io/safetensors_header.h"

namespace cannl::io {

struct SafetensorsFile::Impl {
  std::string name;
  std::optional<MappedFile> mapping;  // set when opened from a path
  std::string owned;                  // set when built from bytes
  std::span<const std::byte> image;
  ParsedHeader header;  // with its index by name

  void validate_and_index() { header = parse_safetensors_header(image, name); }
};

std::int64_t TensorInfo::num_elements() const {
  // Checked, a zero dimension first: [3, 2^62, 0] is empty, though 3 * 2^62 alone overflows.
  const bool negative = std::any_of(shape.begin(), shape.end(), [](std::int64_t d) { return d < 0; });
  const std::optional<std::int64_t> count = checked_product(shape);
  if (negative || !count) {
    std::string dims;
    for (std::size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
    throw FormatError("tensor " + json::quote(name) + ": shape [" + dims +
                      "] has no element count (it overflows 64 bits or has a negative dimension)");
  }
  return *count;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  auto impl = std::make_shared<Impl>();
  impl->name = path.string();
  impl->mapping.emplace(path);
  impl->image = impl->mapping->bytes();
  impl->validate_and_index();
  return SafetensorsFile(std::move(impl));
}

SafetensorsFile SafetensorsFile::from_bytes(std::string bytes, std::string name) {
  auto impl = std::make_shared<Impl>();
  impl->name = std::move(name);
  impl->owned = std::move(bytes);
  impl->image = std::as_bytes(std::span(impl->owned.data(), impl->owned.size()));
  impl->validate_and_index();
  return SafetensorsFile(std::move(impl));
}

const std::string& SafetensorsFile::name() const { return impl_->name; }

const std::vector<TensorInfo>& SafetensorsFile::tensors() const { return impl_->header.tensors; }

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  const std::optional<std::size_t> at = impl_->header.index.find(impl_->header.tensors, name);
  return at ? &impl_->header.tensors[*at] : nullptr;
}

const TensorInfo& SafetensorsFile::info(std::string_view name) const {
  if (const TensorInfo* info = find(name)) return *info;
  std::string held;
  const auto& all = impl_->header.tensors;
  for (std::size_t i = 0; i < all.size() && i < 8; ++i) held += (i ? ", " : "") + json::quote(all[i].name);
  if (all.size() > 8) held += ", ... (" + std::to_string(all.size()) + " in all)";
  throw FormatError(impl_->name + ": no tensor " + json::quote(name) + " (the file holds " +
                    (held.empty() ? std::string("no tensors") : held) + ")");
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const {
  return impl_->header.metadata;
}

std::span<const std::byte> SafetensorsFile::raw_bytes(std::string_view name) const {
  const TensorInfo& tensor = info(name);
  return impl_->image.subspan(impl_->header.data_start + tensor.begin, tensor.end - tensor.begin);
}

std::vector<double> SafetensorsFile::to_f64(std::string_view name) const {
  const TensorInfo& tensor = info(name);
  try {
    return decode_to_f64(tensor.dtype, raw_bytes(name));
  } catch (const FormatError& e) {
    throw FormatError(impl_->name + ": tensor " + json::quote(name) + ": " + e.what());
  }
}

std::vector<float> SafetensorsFile::to_f32(std::string_view name) const {
  const TensorInfo& tensor = info(name);
  try {
    return decode_to_f32(tensor.dtype, raw_bytes(name));  // rounded once, not through to_f64
  } catch (const FormatError& e) {
    throw FormatError(impl_->name + ": tensor " + json::quote(name) + ": " + e.what());
  }
}

}  // namespace cannl::io
