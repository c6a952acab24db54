// Lowering of fetches (initializers, semantics-backend.md 3.3 step 8) to fills over the logical
// cells. A padded node with a declared pad value first gets its margins set to that value.
#include <algorithm>
#include <functional>

#include "cannl/support/error.h"
#include "lower_cells.h"
#include "lower_parts.h"

namespace cannl::ir::lowering {

namespace {

/// Row-major logical offset of a logical index, as one affine index over the loop symbols.
AxisIndex row_major_offset(const std::vector<std::int64_t>& dims,
                           const std::vector<AxisIndex>& index) {
  AxisIndex result = AxisIndex::fixed(0);
  std::int64_t stride = 1;
  for (std::size_t k = dims.size(); k-- > 0;) {
    for (const auto& t : index[k].terms) result.terms.push_back({t.coeff * stride, t.symbol});
    result.offset += index[k].offset * stride;
    stride *= dims[k];
  }
  std::reverse(result.terms.begin(), result.terms.end());  // outermost axis first
  return result;
}

/// Every logical cell := value(logical index).
StmtRef fill_each(const Fetch& f, const std::string& text,
                  const std::function<ScalarRef(const std::vector<AxisIndex>&)>& value) {
  return loop_over_logical(f.node->logical_dims(), [&](const std::vector<AxisIndex>& idx) {
    return set(f.node, buffer_index(*f.node, idx, text), value(idx), text);
  });
}

StmtRef unrolled_fill(const Fetch& f, const FetchConstantFill& fill, const std::string& text) {
  const auto dims = f.node->logical_dims();
  const auto count = static_cast<std::size_t>(f.node->num_logical_elements());
  if (fill.values.size() != count)
    throw InternalError("lowering `" + text + "`: " + std::to_string(fill.values.size()) +
                        " values for " + std::to_string(count) + " cells of " +
                        f.node->debug_name());
  const DType dt = compute_dtype(f.node->dtype);
  std::vector<StmtRef> stmts;
  for (std::size_t offset = 0; offset < count; ++offset) {
    std::vector<AxisIndex> idx(dims.size());
    auto rest = static_cast<std::int64_t>(offset);
    for (std::size_t k = dims.size(); k-- > 0;) {
      idx[k] = AxisIndex::fixed(rest % dims[k]);
      rest /= dims[k];
    }
    stmts.push_back(set(f.node, buffer_index(*f.node, idx, text), constant(fill.values[offset], dt), text));
  }
  return seq(std::move(stmts));
}

StmtRef slice_copy(const Fetch& f, const FetchSlice& s, const std::string& text) {
  internal_check(s.parent != nullptr, [&] { return "lowering `" + text + "`: slice without parent"; });
  if (s.parent->dims.size() != f.node->dims.size() + 1)
    throw InternalError("lowering `" + text + "`: slice parent " + s.parent->debug_name() +
                        " has rank " + std::to_string(s.parent->dims.size()) + ", child " +
                        f.node->debug_name() + " has rank " + std::to_string(f.node->dims.size()) +
                        " (expected parent rank = child rank + 1)");
  return fill_each(f, text, [&](const std::vector<AxisIndex>& idx) {
    std::vector<AxisIndex> parent_idx{AxisIndex::iterator(s.batch_index.symbol)};
    parent_idx.insert(parent_idx.end(), idx.begin(), idx.end());
    return get(s.parent, buffer_index(*s.parent, parent_idx, text));
  });
}

bool zero_fill_suffices(const TensorNode& n, const FetchOp& op) {
  const auto* c = std::get_if<FetchConstant>(&op);
  return c && c->value == 0 && (!n.is_padded() || !n.pad_value || *n.pad_value == 0);
}

StmtRef main_fill(const Fetch& f, const std::string& text) {
  const DType dt = compute_dtype(f.node->dtype);
  const auto& op = f.op;
  if (zero_fill_suffices(*f.node, op)) return zero_out(f.node);
  if (const auto* c = std::get_if<FetchConstant>(&op))
    return fill_logical(f.node, constant(c->value, dt), text);
  if (const auto* b = std::get_if<FetchConstantBits>(&op))
    return fill_logical(f.node, constant_bits(b->bits, DType::I64), text);
  if (const auto* fill = std::get_if<FetchConstantFill>(&op)) return unrolled_fill(f, *fill, text);
  if (std::holds_alternative<FetchRangeOverOffsets>(op)) {
    const auto dims = f.node->logical_dims();
    return fill_each(f, text, [&](const std::vector<AxisIndex>& idx) {
      return embed_index(row_major_offset(dims, idx));
    });
  }
  if (const auto* s = std::get_if<FetchSlice>(&op)) return slice_copy(f, *s, text);
  const auto& e = std::get<FetchEmbedSymbol>(op);
  return fill_logical(f.node, embed_index(AxisIndex::iterator(e.symbol.symbol)), text);
}

}  // namespace

void lower_fetch(const Fetch& f, std::vector<StmtRef>& out) {
  internal_check(f.node != nullptr, "lowering a fetch without a node");
  const std::string text = print_fetch(f);
  if (f.node->pad_value && !zero_fill_suffices(*f.node, f.op)) {
    const auto value = constant(*f.node->pad_value, compute_dtype(f.node->dtype));
    if (auto margins = fill_margins(f.node, value, text)) out.push_back(margins);
  }
  out.push_back(main_fill(f, text));
}

}  // namespace cannl::ir::lowering
