// Checkpoints of a training step (save_training_checkpoint / restore_training_checkpoint,
// include/cannl/nn/data_parallel.h): the parameters, the optimizer state and the model state the
// step writes in place (BatchNorm's running statistics, dropout's steps-done counters) as tensors; the loss scaler's state and a
// data-parallel step's global steps as metadata. A resumed run continues from all of it.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "cannl/io/checkpoint.h"
#include "cannl/io/safetensors.h"
#include "cannl/nn/data_parallel.h"
#include "cannl/support/error.h"
#include "cannl/support/log.h"

namespace cannl::train {
namespace {

using Metadata = std::map<std::string, std::string>;

const std::string kStatePrefix = "state/";

std::vector<io::CheckpointEntry> training_entries(const TrainingStep& step) {
  std::vector<io::CheckpointEntry> entries;
  for (const auto& node : step.params) entries.push_back({"params/" + node->label, node});
  for (const auto& node : step.optimizer_state) entries.push_back({"optimizer/" + node->label, node});
  for (const auto& node : step.model_state) entries.push_back({kStatePrefix + node->label, node});
  return entries;
}

/// io::restore_checkpoint would name the missing tensor but not why it is missing: files written
/// before checkpoints kept the model state lack it, and a model resumed without it evaluates on
/// its initial statistics.
void check_model_state_saved(const io::SafetensorsFile& file, const TrainingStep& step) {
  for (const auto& node : step.model_state)
    if (!file.find(kStatePrefix + node->label))
      throw FormatError(file.name() + ": no tensor '" + kStatePrefix + node->label +
                        "', model state the training step writes (BatchNorm's running statistics, "
                        "dropout's steps-done counters): the file was written before checkpoints kept it, or by another "
                        "model. To take its parameters alone, use io::restore_checkpoint");
}

/// 17 significant digits: a double reads back exactly.
std::string exact_text(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

void save_loss_scale(const nn::LossScaleState& s, Metadata& metadata) {
  metadata["loss_scale"] = exact_text(s.scale);
  metadata["loss_scale_good_streak"] = std::to_string(s.good_streak);
  metadata["loss_scale_steps"] = std::to_string(s.steps);
  metadata["loss_scale_skipped_steps"] = std::to_string(s.skipped_steps);
}

const std::string& metadata_entry(const std::string& file, const Metadata& metadata, const std::string& key) {
  const auto it = metadata.find(key);
  if (it == metadata.end()) throw FormatError(file + ": metadata has no " + key);
  return it->second;
}

std::int64_t integer_entry(const std::string& file, const Metadata& metadata, const std::string& key) {
  const std::string& text = metadata_entry(file, metadata, key);
  std::size_t used = 0;
  try {
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw FormatError(file + ": metadata " + key + " = '" + text + "' is not a count (an integer >= 0)");
}

double scale_entry(const std::string& file, const Metadata& metadata, const std::string& key) {
  const std::string& text = metadata_entry(file, metadata, key);
  std::size_t used = 0;
  try {
    const double v = std::stod(text, &used);
    const float as_f32 = static_cast<float>(v);
    if (used == text.size() && std::isfinite(as_f32) && as_f32 > 0) return v;
  } catch (const std::exception&) {
  }
  throw FormatError(file + ": metadata " + key + " = '" + text + "' is not a positive finite f32");
}

/// The loss scaler's saved state; nullopt (with a warning: the scale then adapts again from its
/// current value) for a file written before checkpoints kept it.
std::optional<nn::LossScaleState> saved_loss_scale(const std::string& file, const Metadata& metadata) {
  if (!metadata.contains("loss_scale")) {
    logging::warn(file + ": the checkpoint holds no loss_scale (written without loss scaling, or before "
                  "checkpoints kept it); the loss scale starts again from init_scale");
    return std::nullopt;
  }
  nn::LossScaleState s;
  s.scale = scale_entry(file, metadata, "loss_scale");
  s.good_streak = integer_entry(file, metadata, "loss_scale_good_streak");
  s.steps = integer_entry(file, metadata, "loss_scale_steps");
  s.skipped_steps = integer_entry(file, metadata, "loss_scale_skipped_steps");
  return s;
}

}  // namespace

void save_training_checkpoint(TrainingStep& step, const std::filesystem::path& path, const Metadata& metadata) {
  const auto comm = step.parallel ? step.parallel->communicator : runtime::single_process_communicator();
  Metadata all = metadata;
  if (step.parallel) all["global_steps"] = std::to_string(step.parallel->steps_done);
  if (step.loss_scaler) save_loss_scale(step.loss_scaler->state(), all);
  if (comm->rank() == 0) io::save_checkpoint(step.ctx, training_entries(step), path, all);
  comm->barrier("checkpoint " + path.string() + " written");
}

Metadata restore_training_checkpoint(TrainingStep& step, const std::filesystem::path& path) {
  // Everything is read and checked before anything changes: a bad file leaves the step as it was.
  const auto file = io::SafetensorsFile::open(path);
  const Metadata metadata = file.metadata();
  check_model_state_saved(file, step);
  std::optional<std::int64_t> global_steps;
  if (step.parallel && metadata.contains("global_steps"))
    global_steps = integer_entry(file.name(), metadata, "global_steps");
  std::optional<nn::LossScaleState> loss_scale;
  if (step.loss_scaler) loss_scale = saved_loss_scale(file.name(), metadata);

  const auto entries = training_entries(step);
  if (!step.parallel) {
    io::restore_checkpoint(step.ctx, entries, path);
  } else {
    for (Replica& r : step.parallel->local) io::restore_checkpoint(r.ctx, entries, path);
  }
  if (global_steps) step.parallel->steps_done = *global_steps;
  if (loss_scale) step.loss_scaler->restore(step.ctx, *loss_scale);
  return metadata;
}

}  // namespace cannl::train
