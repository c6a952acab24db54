// Loading a Hugging Face GPT-2 safetensors checkpoint into the model's parameters. Each cannl
// parameter is a column range of one checkpoint tensor viewed as [rows, cols], transposed when the
// checkpoint stores it [in, out] (Conv1D, and the embedding tables, whose cannl form is
// [dim <- vocab]); the fused c_attn gives three ranges (q, k, v). Loading checks every tensor
// (presence, shape, floating dtype, the tied head) before uploading any, then decodes each
// tensor once for all its slots.
#include <cmath>
#include <cstring>
#include <map>
#include <numbers>
#include <sstream>

#include "cannl/nn/gpt2.h"
#include "cannl/support/error.h"
#include "cannl/support/log.h"

namespace cannl::nn {
namespace {

using Shape = std::vector<std::int64_t>;

/// One cannl parameter and where its values sit in the checkpoint.
struct Slot {
  std::string name;        // checkpoint name without the `transformer.` prefix
  Shape shape;             // the checkpoint tensor's expected shape
  Tensor param;
  std::int64_t col_begin = 0;
  std::int64_t cols = 0;   // 0 = every column
  bool transpose = false;  // the parameter is the range transposed: [cols, rows]
};

std::string shape_text(const Shape& s) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < s.size(); ++i) out << (i ? ", " : "") << s[i];
  out << "]";
  return out.str();
}

void add_block_slots(std::vector<Slot>& slots, const DecoderBlock& b, const std::string& p,
                     std::int64_t d) {
  slots.push_back({p + "ln_1.weight", {d}, b.ln1.gamma});
  slots.push_back({p + "ln_1.bias", {d}, b.ln1.beta});
  const Tensor* qkv_w[] = {&b.attn.q.w, &b.attn.k.w, &b.attn.v.w};
  const Tensor* qkv_b[] = {&*b.attn.q.b, &*b.attn.k.b, &*b.attn.v.b};
  for (std::int64_t i = 0; i < 3; ++i) {
    slots.push_back({p + "attn.c_attn.weight", {d, 3 * d}, *qkv_w[i], i * d, d, true});
    slots.push_back({p + "attn.c_attn.bias", {3 * d}, *qkv_b[i], i * d, d});
  }
  slots.push_back({p + "attn.c_proj.weight", {d, d}, b.attn.o.w, 0, 0, true});
  slots.push_back({p + "attn.c_proj.bias", {d}, *b.attn.o.b});
  slots.push_back({p + "ln_2.weight", {d}, b.ln2.gamma});
  slots.push_back({p + "ln_2.bias", {d}, b.ln2.beta});
  slots.push_back({p + "mlp.c_fc.weight", {d, 4 * d}, b.fc.w, 0, 0, true});
  slots.push_back({p + "mlp.c_fc.bias", {4 * d}, *b.fc.b});
  slots.push_back({p + "mlp.c_proj.weight", {4 * d, d}, b.proj.w, 0, 0, true});
  slots.push_back({p + "mlp.c_proj.bias", {d}, *b.proj.b});
}

std::vector<Slot> slots_of(const Gpt2Blocks& m) {
  const Gpt2Config& c = m.config;
  std::vector<Slot> slots;
  slots.push_back({"wte.weight", {c.vocab_size, c.n_embd}, m.wte.table, 0, 0, true});
  slots.push_back({"wpe.weight", {c.n_positions, c.n_embd}, m.wpe.table, 0, 0, true});
  for (std::size_t i = 0; i < m.h.size(); ++i)
    add_block_slots(slots, m.h[i], "h." + std::to_string(i) + ".", c.n_embd);
  slots.push_back({"ln_f.weight", {c.n_embd}, m.ln_f.gamma});
  slots.push_back({"ln_f.bias", {c.n_embd}, m.ln_f.beta});
  return slots;
}

/// The checkpoint's naming scheme: "" (official file) or "transformer." (a state dict).
std::string detect_prefix(const io::SafetensorsFile& file) {
  if (file.find("wte.weight")) return "";
  if (file.find("transformer.wte.weight")) return "transformer.";
  throw FormatError("gpt2 checkpoint " + file.name() +
                    ": missing tensor 'wte.weight' (nor 'transformer.wte.weight' is present); "
                    "is this a GPT-2 checkpoint?");
}

/// Whether the reader decodes `dtype` as weights: floats only. An integer or BOOL tensor of the
/// right shape is not a weight, whatever numbers its bits would give.
bool is_floating(io::SafetensorsDType dtype) {
  using D = io::SafetensorsDType;
  return dtype == D::F32 || dtype == D::F16 || dtype == D::BF16 || dtype == D::F64 ||
         dtype == D::F8_E5M2 || dtype == D::F8_E4M3;
}

/// The tensor `name`, checked: present, of shape `expected` and of a floating dtype.
const io::TensorInfo& checked_info(const io::SafetensorsFile& file, const std::string& name,
                                   const Shape& expected, const Gpt2Config& c) {
  const io::TensorInfo* info = file.find(name);
  if (!info)
    throw FormatError("gpt2 checkpoint " + file.name() + ": missing tensor '" + name +
                      "' (expected shape " + shape_text(expected) + ")");
  if (info->shape != expected)
    throw FormatError("gpt2 checkpoint " + file.name() + ": tensor '" + name + "' has shape " +
                      shape_text(info->shape) + ", expected " + shape_text(expected) +
                      " for the config (" + c.describe() + ")");
  if (!is_floating(info->dtype))
    throw FormatError("gpt2 checkpoint " + file.name() + ": tensor '" + name + "' has dtype " +
                      std::string(io::safetensors_dtype_name(info->dtype)) +
                      "; weights must be floating (F32, F16, BF16, F64, F8_E5M2 or F8_E4M3)");
  return *info;
}

/// The slot's parameter values, row-major in the parameter's memory order.
std::vector<float> slot_values(const Slot& s, const std::vector<float>& source) {
  const std::int64_t total_cols = s.shape.back();
  const std::int64_t rows = static_cast<std::int64_t>(source.size()) / total_cols;
  const std::int64_t cols = s.cols > 0 ? s.cols : total_cols;
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t to = s.transpose ? c * rows + r : r * cols + c;
      out[static_cast<std::size_t>(to)] =
          source[static_cast<std::size_t>(r * total_cols + s.col_begin + c)];
    }
  return out;
}

void upload(runtime::Context& ctx, const Tensor& param, const std::vector<float>& values,
            const std::string& name) {
  std::int64_t count = 1;
  for (std::int64_t d : param.dims()) count *= d;
  if (count != static_cast<std::int64_t>(values.size()))
    throw InternalError("gpt2: parameter " + param.label() + " has " + std::to_string(count) +
                        " cells but checkpoint tensor " + name + " gives " +
                        std::to_string(values.size()));
  if (param.value()->dtype == ir::DType::F32) {
    ctx.set_bytes(param.value(), std::as_bytes(std::span(values)));
    return;
  }
  ctx.set_values(param.value(), std::vector<double>(values.begin(), values.end()));
}

void check_tied_head(const io::SafetensorsFile& file, const std::vector<float>& wte,
                     const Gpt2Config& c) {
  const std::string name = "lm_head.weight";
  if (!file.find(name)) return;
  checked_info(file, name, {c.vocab_size, c.n_embd}, c);
  // Bitwise: a NaN is not equal to itself, yet a head tied to a NaN embedding is still tied.
  const std::vector<float> head = file.to_f32(name);
  if (head.size() != wte.size() || std::memcmp(head.data(), wte.data(), head.size() * sizeof(float)) != 0)
    throw FormatError("gpt2 checkpoint " + file.name() +
                      ": 'lm_head.weight' differs from 'wte.weight'; cannl's GPT-2 ties the "
                      "output projection to the token embedding");
}

/// Hugging Face's GPT-2 initialization: matrices and embeddings N(0, 0.02), LayerNorm gains 1,
/// biases 0; normals by Box-Muller from splitmix64, so every platform draws the same weights.
std::vector<float> initial_values(const Slot& s, std::int64_t count, std::uint64_t& state) {
  const bool ln = s.name.find("ln_") != std::string::npos;
  const bool weight = s.name.ends_with(".weight");
  std::vector<float> v(static_cast<std::size_t>(count), ln && weight ? 1.0f : 0.0f);
  if (ln || !weight) return v;
  const auto next = [&] {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (static_cast<double>((z ^ (z >> 31)) >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
  };
  for (auto& x : v)
    x = static_cast<float>(0.02 * std::sqrt(-2 * std::log(next())) * std::cos(2 * std::numbers::pi * next()));
  return v;
}

}  // namespace

void Gpt2::randomize_weights(std::uint64_t seed) {
  std::uint64_t state = seed;
  for (const Slot& s : slots_of(blocks_)) {
    std::int64_t count = 1;
    for (std::int64_t d : s.param.dims()) count *= d;
    upload(ctx_, s.param, initial_values(s, count, state), s.name);
  }
}

namespace {

/// Tensors holding NaN or infinite values, for one warning after loading: such weights make
/// every logit NaN, and greedy decoding then picks token 0 every time with no other sign.
struct NonFiniteReport {
  std::vector<std::string> tensors;  // "wte.weight (3200 of 3200)"
  bool all = true;

  void add(const std::vector<float>& values, const std::string& name) {
    std::size_t bad = 0;
    for (float v : values) bad += std::isfinite(v) ? 0 : 1;
    if (bad == 0) {
      all = false;
      return;
    }
    all = all && bad == values.size();
    tensors.push_back(name + " (" + std::to_string(bad) + " of " + std::to_string(values.size()) + ")");
  }

  void warn(const std::string& file) const {
    if (tensors.empty()) return;
    std::string list;
    for (std::size_t i = 0; i < tensors.size() && i < 3; ++i) list += (i ? ", " : "") + tensors[i];
    if (tensors.size() > 3) list += ", ... " + std::to_string(tensors.size() - 3) + " more";
    logging::warn("weights in " + file + ": " + std::to_string(tensors.size()) +
                  " tensors hold values that are NaN or infinite" + (all ? " (all of them)" : "") +
                  ": " + list + "; the model's outputs will be NaN too");
  }
};

/// One checkpoint tensor and the slots it fills, in the order of their first slots.
struct CheckpointTensor {
  std::string name;  // with the file's prefix
  std::vector<const Slot*> slots;
};

std::vector<CheckpointTensor> checkpoint_tensors(const std::vector<Slot>& slots,
                                                 const std::string& prefix) {
  std::vector<CheckpointTensor> tensors;
  std::map<std::string, std::size_t> index;
  for (const Slot& s : slots) {
    const auto [it, added] = index.emplace(prefix + s.name, tensors.size());
    if (added) tensors.push_back({prefix + s.name, {}});
    tensors[it->second].slots.push_back(&s);
  }
  return tensors;
}

}  // namespace

void Gpt2::load_weights(const io::SafetensorsFile& file) {
  const std::string prefix = detect_prefix(file);
  const std::vector<Slot> slots = slots_of(blocks_);
  const std::vector<CheckpointTensor> tensors = checkpoint_tensors(slots, prefix);
  // Every check before the first upload: a bad file leaves the parameters as they were.
  for (const CheckpointTensor& t : tensors)
    checked_info(file, t.name, t.slots.front()->shape, config());
  std::vector<float> wte = file.to_f32(prefix + "wte.weight");
  check_tied_head(file, wte, config());
  NonFiniteReport non_finite;
  for (const CheckpointTensor& t : tensors) {
    // Decoded once for all its slots (c_attn feeds q, k and v), so it is also counted once.
    const std::vector<float> values =
        t.name == prefix + "wte.weight" ? std::move(wte) : file.to_f32(t.name);
    non_finite.add(values, t.name);
    for (const Slot* s : t.slots) upload(ctx_, s->param, slot_values(*s, values), t.name);
  }
  non_finite.warn(file.name());
}

}  // namespace cannl::nn
