#pragma once
// Checkpoints: a named set of tensor nodes of a runtime::Context saved to and restored from a
// safetensors file, bit for bit in each node's storage format.
//
// Names carry a namespace prefix ("model_a/w1"), so two models (or a model and its optimizer
// state) live side by side in one file or one context. Nodes are matched by name, never by
// node id, so a rebuilt model restores as long as its parameters keep their labels; to load one
// model's weights into another, build the second model's entries under the first one's namespace.
// Files are ordinary safetensors (readable by any safetensors library) whose "__metadata__"
// records the cannl version, the checkpoint format version, every entry's cannl dtype and the
// namespaces. Saving is atomic: an interrupted save leaves the previous checkpoint as it was.
//
//   auto entries = io::checkpoint_entries("model_a", {loss}, {momentum_node});
//   io::save_checkpoint(ctx, entries, "run/ckpt.safetensors");
//   ...
//   io::restore_checkpoint(ctx, entries, "run/ckpt.safetensors");

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cannl/io/safetensors.h"
#include "cannl/ir/tensor_node.h"
#include "cannl/runtime/context.h"
#include "cannl/tensor/tensor.h"

namespace cannl::io {

/// The checkpoint format version written in the metadata ("cannl_checkpoint_version").
inline constexpr std::string_view kCheckpointFormatVersion = "1";
/// The cannl version written in the metadata ("cannl_version"); kept equal to CMake's
/// project(VERSION) by a test.
inline constexpr std::string_view kCannlVersion = "0.1.0";

/// One node under the name it has in a checkpoint file.
///   CheckpointEntry{"model_a/w1", w1.value()}
struct CheckpointEntry {
  std::string name;
  ir::NodeRef node;
};

/// Entries for the parameters of the roots' graphs (params_of, in first-use order) and `extra`
/// nodes (optimizer state, running statistics, step counters), each named
/// `name_space + "/" + label` (just the label when `name_space` is empty). Finishes shape
/// inference of the roots first (so every node has its dims). Throws RuntimeUsageError when two
/// of them would share a name.
///   checkpoint_entries("model_a", {loss}, {sgd_momentum})  // {"model_a/w1", ...}
std::vector<CheckpointEntry> checkpoint_entries(std::string_view name_space,
                                                const std::vector<Tensor>& roots,
                                                const std::vector<ir::NodeRef>& extra = {});

/// Writes the entries' current values in `ctx` to `path` atomically (temp file + rename), each
/// as the safetensors dtype with the node's storage format (u4x32 as U32 with a trailing axis
/// of 4). `metadata` entries are added to the file's "__metadata__" (keys starting with "cannl_"
/// are reserved). Throws RuntimeUsageError / UninitializedError when a node has no value in
/// `ctx`, IoError when the file cannot be written.
///   save_checkpoint(ctx, entries, "ckpt.safetensors", {{"step", "1000"}});
void save_checkpoint(const runtime::Context& ctx, std::span<const CheckpointEntry> entries,
                     const std::filesystem::path& path,
                     const std::map<std::string, std::string>& metadata = {},
                     const WriteOptions& options = {});

/// Uploads each entry's stored bytes into `ctx` (marking the node initialized). Every entry must
/// be in the file with the node's dtype and logical shape; tensors of the file no entry names are
/// ignored (so one model can be restored from a file holding two). All entries are checked
/// before any is uploaded: on a FormatError (missing tensor, dtype or shape mismatch naming both
/// shapes, corrupt file) the context is unchanged.
///   restore_checkpoint(ctx, entries, "ckpt.safetensors");
void restore_checkpoint(runtime::Context& ctx, std::span<const CheckpointEntry> entries,
                        const std::filesystem::path& path);

}  // namespace cannl::io
