// Checkpoints as safetensors files: names with namespaces, storage-format bytes from
// Context::get_bytes, cannl dtypes recorded in the metadata (u4x32 has no safetensors dtype).
#include "cannl/io/checkpoint.h"

#include <map>
#include <set>

#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "io/json.h"
#include "io/safetensors_header.h"

namespace cannl::io {
namespace {

/// How a node is stored: its safetensors dtype and shape (u4x32 cells become 4 U32 words).
struct StoredForm {
  SafetensorsDType dtype;
  std::vector<std::int64_t> shape;
};

StoredForm stored_form(const ir::TensorNode& node) {
  StoredForm form{SafetensorsDType::U32, node.logical_dims()};
  if (node.dtype == ir::DType::U4x32) {
    form.shape.push_back(4);
    return form;
  }
  std::optional<SafetensorsDType> dtype = to_safetensors_dtype(node.dtype);
  internal_check(dtype.has_value(),
                 [&] { return "no safetensors dtype for " + std::string(ir::dtype_name(node.dtype)); });
  form.dtype = *dtype;
  return form;
}

std::string namespace_of(const std::string& name) {
  std::size_t slash = name.rfind('/');
  return slash == std::string::npos ? std::string() : name.substr(0, slash);
}

std::map<std::string, std::string> checkpoint_metadata(std::span<const CheckpointEntry> entries,
                                                       std::map<std::string, std::string> metadata) {
  for (const auto& [key, value] : metadata) {
    if (key.rfind("cannl_", 0) == 0)
      throw RuntimeUsageError("checkpoint metadata key " + json::quote(key) +
                              " is reserved (keys starting with \"cannl_\" are cannl's)");
  }
  std::string dtypes = "{";
  std::set<std::string> namespaces;
  for (const CheckpointEntry& entry : entries) {
    dtypes += (dtypes.size() > 1 ? "," : "") + json::quote(entry.name) + ":" +
              json::quote(ir::dtype_name(entry.node->dtype));
    namespaces.insert(namespace_of(entry.name));
  }
  std::string namespace_list = "[";
  for (const std::string& name : namespaces)
    namespace_list += (namespace_list.size() > 1 ? "," : "") + json::quote(name);
  metadata["format"] = metadata.contains("format") ? metadata["format"] : "cannl";
  metadata["cannl_version"] = std::string(kCannlVersion);
  metadata["cannl_checkpoint_version"] = std::string(kCheckpointFormatVersion);
  metadata["cannl_dtypes"] = dtypes + "}";
  metadata["cannl_namespaces"] = namespace_list + "]";
  return metadata;
}

void check_entries(std::span<const CheckpointEntry> entries) {
  std::set<std::string_view> names;
  for (const CheckpointEntry& entry : entries) {
    if (!entry.node) throw RuntimeUsageError("checkpoint entry " + json::quote(entry.name) + " has no node");
    if (!names.insert(entry.name).second)
      throw RuntimeUsageError("checkpoint entry name " + json::quote(entry.name) +
                              " is used twice; give the models different namespaces");
  }
}

/// The cannl dtype names recorded by save_checkpoint, or an empty map for a foreign file.
std::map<std::string, std::string> recorded_dtypes(const SafetensorsFile& file) {
  std::map<std::string, std::string> dtypes;
  auto it = file.metadata().find("cannl_dtypes");
  if (it == file.metadata().end()) return dtypes;
  json::Value value;
  try {
    value = json::parse(it->second);
  } catch (const FormatError& e) {
    throw FormatError(file.name() + ": metadata cannl_dtypes: " + e.what());
  }
  for (std::size_t i = 0; i < value.keys.size(); ++i) {
    if (value.items[i].kind != json::Kind::String)
      throw FormatError(file.name() + ": metadata cannl_dtypes entry " +
                        json::quote(value.keys[i]) + " is not a string");
    dtypes[value.keys[i]] = value.items[i].text;
  }
  return dtypes;
}

/// The cannl dtype a file records for a tensor; for a foreign file the one with the same storage
/// format, else the safetensors name (which matches no cannl dtype).
std::string file_dtype_name(const TensorInfo& info, const std::map<std::string, std::string>& dtypes) {
  if (auto recorded = dtypes.find(info.name); recorded != dtypes.end()) return recorded->second;
  if (std::optional<ir::DType> same = to_cannl_dtype(info.dtype)) return std::string(ir::dtype_name(*same));
  return std::string(safetensors_dtype_name(info.dtype));
}

void check_matches(const SafetensorsFile& file, const CheckpointEntry& entry,
                   const std::map<std::string, std::string>& dtypes) {
  const TensorInfo& info = file.info(entry.name);
  const ir::TensorNode& node = *entry.node;
  const StoredForm form = stored_form(node);
  const std::string file_dtype = file_dtype_name(info, dtypes);
  const std::string where = file.name() + ": tensor " + json::quote(entry.name) + " (node " +
                            node.debug_name() + ")";
  if (file_dtype != ir::dtype_name(node.dtype) || info.dtype != form.dtype)
    throw FormatError(where + ": the checkpoint holds " + file_dtype + " (" +
                      std::string(safetensors_dtype_name(info.dtype)) + ") but the node is " +
                      std::string(ir::dtype_name(node.dtype)) +
                      "; restore is bit-exact, so to convert read the tensor with "
                      "SafetensorsFile::to_f64 and upload it with Context::set_values");
  if (info.shape != form.shape)
    throw FormatError(where + ": the checkpoint's shape " + shape_string(info.shape) +
                      " differs from the node's shape " + shape_string(form.shape) +
                      "; build the model with the checkpoint's sizes");
}

}  // namespace

std::vector<CheckpointEntry> checkpoint_entries(std::string_view name_space,
                                                const std::vector<Tensor>& roots,
                                                const std::vector<ir::NodeRef>& extra) {
  resolve_shapes(roots);
  const std::string prefix = name_space.empty() ? std::string() : std::string(name_space) + "/";
  std::vector<CheckpointEntry> entries;
  for (const Tensor& param : params_of(roots))
    entries.push_back({prefix + param.value()->label, param.value()});
  for (const ir::NodeRef& node : extra) {
    if (!node) throw RuntimeUsageError("checkpoint_entries was given a null extra node");
    entries.push_back({prefix + node->label, node});
  }
  check_entries(entries);
  return entries;
}

void save_checkpoint(const runtime::Context& ctx, std::span<const CheckpointEntry> entries,
                     const std::filesystem::path& path,
                     const std::map<std::string, std::string>& metadata,
                     const WriteOptions& options) {
  check_entries(entries);
  std::vector<std::vector<std::byte>> payloads;
  std::vector<TensorToWrite> tensors;
  payloads.reserve(entries.size());
  for (const CheckpointEntry& entry : entries) {
    payloads.push_back(ctx.get_bytes(entry.node));
    StoredForm form = stored_form(*entry.node);
    tensors.push_back({entry.name, form.dtype, std::move(form.shape), payloads.back()});
  }
  write_safetensors(path, tensors, checkpoint_metadata(entries, metadata), options);
}

void restore_checkpoint(runtime::Context& ctx, std::span<const CheckpointEntry> entries,
                        const std::filesystem::path& path) {
  check_entries(entries);
  const SafetensorsFile file = SafetensorsFile::open(path);
  const std::map<std::string, std::string> dtypes = recorded_dtypes(file);
  for (const CheckpointEntry& entry : entries) check_matches(file, entry, dtypes);
  for (const CheckpointEntry& entry : entries) ctx.set_bytes(entry.node, file.raw_bytes(entry.name));
}

}  // namespace cannl::io
