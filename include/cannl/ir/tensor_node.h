#pragma once
// Tensor nodes: the buffers the IRs read and write.
//
// A node is created by the front end with its label and precision; shape inference fills `dims`
// (padded buffer dims, row-major) and `padding` before anything is lowered. Memory intent is
// recorded with provenance so dumps say who decided what.
//
//   auto w = make_node("w1", DType::F32);  w->dims = {64, 2};

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cannl/ir/dtype.h"

namespace cannl::ir {

/// Declared memory intent (semantics-backend.md 2.3), refined monotonically.
enum class MemoryMode : unsigned char {
  Unset,                // nothing declared; the optimizer decides
  EffectivelyConstant,  // a constant; may be inlined
  Virtual,              // computed per use, no storage
  NeverVirtual,         // must be stored: Local or OnDevice
  Local,                // stored for one routine run only
  DeviceOnly,           // Local or OnDevice
  OnDevice,             // a persistent context buffer, host-readable
  Materialized,         // a persistent request; resolves to OnDevice
};
std::string_view memory_mode_name(MemoryMode m);

/// A format narrower than f32 whose values a node's f32 cells hold exactly: the operand copies
/// of a mixed-precision contraction (rounded by round_bf16 / round_f16 / round_tf32). A tensor
/// core multiplies such operands converted to the format without losing anything.
enum class NarrowFormat : unsigned char { None, BF16, F16, TF32 };
/// "none", "bf16", "f16", "tf32".
std::string_view narrow_format_name(NarrowFormat f);

/// Left/right padding margins of one axis, in elements.
struct AxisPadding {
  std::int64_t left = 0;
  std::int64_t right = 0;
  friend bool operator==(const AxisPadding&, const AxisPadding&) = default;
};

struct TensorNode {
  int id = 0;             // process-unique, printed n<id>
  std::string label;      // e.g. "w1", "grad_w1"; identifiers in generated code derive from it
  DType dtype = DType::F32;
  std::vector<std::int64_t> dims;     // padded buffer dims; empty = scalar (one element)
  std::vector<AxisPadding> padding;   // empty, or one entry per axis
  std::optional<double> pad_value;    // value the margins hold; nullopt = reset before each use
  MemoryMode mode = MemoryMode::Unset;
  int provenance = 0;     // who set `mode` (a code readable in dumps)
  /// Host data uploaded at link time (literals, loaded weights), in the node's storage format,
  /// unpadded row-major. Empty when none.
  std::shared_ptr<const std::vector<std::byte>> host_init;
  /// Its values come from the host once (a literal) and no routine is meant to write them: the
  /// tuner may pack it once out of a routine (a hoisted Stage), since real use pays that once too.
  bool host_constant = false;
  /// Every value written to the node is rounded to this format (NarrowFormat::None: no such
  /// promise). Set by the front end on the operand copies a precision policy makes; the GPU's
  /// final lowering round checks the writes it sees before it lets a tensor core read the node.
  NarrowFormat rounded_to = NarrowFormat::None;

  /// Number of elements of the padded buffer (1 for a scalar).
  std::int64_t num_elements() const;
  /// Logical (unpadded) dims.
  std::vector<std::int64_t> logical_dims() const;
  std::int64_t num_logical_elements() const;
  std::size_t size_in_bytes() const;
  bool is_padded() const;
  /// Debug name: label if any, else n<id>.
  std::string debug_name() const;
};

using NodeRef = std::shared_ptr<TensorNode>;

/// Creates a node with a fresh process-unique id.
NodeRef make_node(std::string label, DType dtype, std::vector<std::int64_t> dims = {});

/// Refines `node`'s memory mode; throws UserError on a contradiction (e.g. NeverVirtual -> Virtual).
void update_memory_mode(TensorNode& node, MemoryMode mode, int provenance);

}  // namespace cannl::ir
