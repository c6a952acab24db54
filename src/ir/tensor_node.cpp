#include "cannl/ir/tensor_node.h"

#include <atomic>

#include "cannl/support/checked.h"
#include "cannl/support/error.h"

namespace cannl::ir {

std::string_view memory_mode_name(MemoryMode m) {
  switch (m) {
    case MemoryMode::Unset: return "unset";
    case MemoryMode::EffectivelyConstant: return "effectively_constant";
    case MemoryMode::Virtual: return "virtual";
    case MemoryMode::NeverVirtual: return "never_virtual";
    case MemoryMode::Local: return "local";
    case MemoryMode::DeviceOnly: return "device_only";
    case MemoryMode::OnDevice: return "on_device";
    case MemoryMode::Materialized: return "materialized";
  }
  return "?";
}

std::string_view narrow_format_name(NarrowFormat f) {
  switch (f) {
    case NarrowFormat::None: return "none";
    case NarrowFormat::BF16: return "bf16";
    case NarrowFormat::F16: return "f16";
    case NarrowFormat::TF32: return "tf32";
  }
  return "?";
}

namespace {

/// The product of `sizes`; a ShapeError naming the node when it leaves the int64 range (shape
/// inference rejects such shapes first; nodes built directly get the same check).
std::int64_t element_count(const TensorNode& node, const std::vector<std::int64_t>& sizes) {
  const auto n = checked_product(sizes);
  if (!n) throw ShapeError("size overflow: tensor '" + node.debug_name() + "' has more elements than fit in 64 bits");
  return *n;
}

}  // namespace

std::int64_t TensorNode::num_elements() const { return element_count(*this, dims); }

std::vector<std::int64_t> TensorNode::logical_dims() const {
  if (padding.empty()) return dims;
  std::vector<std::int64_t> result(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i)
    result[i] = dims[i] - padding[i].left - padding[i].right;
  return result;
}

std::int64_t TensorNode::num_logical_elements() const { return element_count(*this, logical_dims()); }

std::size_t TensorNode::size_in_bytes() const {
  const auto bytes = checked_mul(num_elements(), static_cast<std::int64_t>(dtype_bytes(dtype)));
  if (!bytes)
    throw ShapeError("size overflow: tensor '" + debug_name() + "' needs more bytes than fit in 64 bits");
  return static_cast<std::size_t>(*bytes);
}

bool TensorNode::is_padded() const {
  for (const auto& p : padding)
    if (p.left != 0 || p.right != 0) return true;
  return false;
}

std::string TensorNode::debug_name() const {
  return label.empty() ? "n" + std::to_string(id) : label;
}

NodeRef make_node(std::string label, DType dtype, std::vector<std::int64_t> dims) {
  static std::atomic<int> next_id{1};
  auto node = std::make_shared<TensorNode>();
  node->id = next_id++;
  node->label = std::move(label);
  node->dtype = dtype;
  node->dims = std::move(dims);
  return node;
}

namespace {
bool is_stored(MemoryMode m) {
  return m == MemoryMode::NeverVirtual || m == MemoryMode::Local || m == MemoryMode::DeviceOnly ||
         m == MemoryMode::OnDevice || m == MemoryMode::Materialized;
}
bool is_persistent(MemoryMode m) {
  return m == MemoryMode::OnDevice || m == MemoryMode::Materialized;
}
}  // namespace

void update_memory_mode(TensorNode& node, MemoryMode mode, int provenance) {
  const MemoryMode old = node.mode;
  if (old == mode || mode == MemoryMode::Unset) return;
  const bool contradiction =
      (old == MemoryMode::Virtual && is_stored(mode)) ||
      (is_stored(old) && mode == MemoryMode::Virtual) ||
      (old == MemoryMode::Local && is_persistent(mode)) ||
      (is_persistent(old) && mode == MemoryMode::Local);
  if (contradiction)
    throw UserError("memory mode of node " + node.debug_name() + " cannot change from " +
                    std::string(memory_mode_name(old)) + " (provenance " +
                    std::to_string(node.provenance) + ") to " +
                    std::string(memory_mode_name(mode)) + " (provenance " +
                    std::to_string(provenance) + ")");
  // Refinement keeps the more specific request: persistent beats "stored somewhere".
  if (old == MemoryMode::OnDevice && mode == MemoryMode::Materialized) return;
  if (is_persistent(old) && !is_persistent(mode) && mode != MemoryMode::EffectivelyConstant) return;
  if (old == MemoryMode::EffectivelyConstant && is_persistent(mode)) mode = MemoryMode::Materialized;
  node.mode = mode;
  node.provenance = provenance;
}

}  // namespace cannl::ir
