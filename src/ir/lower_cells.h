#pragma once
// Private helpers of lowering (src/ir/lower*.cpp): loop nests over the cells of a node.
//
// Logical indices count from 0 inside the unpadded region; buffer indices add each axis's left
// padding (semantics-backend.md 2.2: semantic index -1 becomes buffer index left-1).
//
//   loop_over_logical({2, 3}, [&](auto idx) { return set(x, buffer_index(x, idx, "fill"), v); })
//     == for i in [0, 2): for j in [0, 3): x[i + l0, j + l1] = v

#include <functional>
#include <string>
#include <vector>

#include "cannl/ir/loop_ir.h"

namespace cannl::ir::lowering {

using CellBody = std::function<StmtRef(const std::vector<AxisIndex>& logical_index)>;

/// A loop nest over [0, dims[k]) per axis with fresh symbols; an axis of extent 1 gets no loop
/// (its index is fixed 0). `body` receives the logical index of the cell.
StmtRef loop_over_logical(const std::vector<std::int64_t>& dims, const CellBody& body);

/// The buffer index of a logical index of `node`: adds left padding. Throws InternalError (naming
/// the node and `context`) when the ranks differ.
std::vector<AxisIndex> buffer_index(const TensorNode& node, std::vector<AxisIndex> logical,
                                    const std::string& context);

/// Sets every margin cell (buffer cells outside the logical region) of a padded node to `value`;
/// nullptr when the node has no margins. Interior cells are not touched.
StmtRef fill_margins(const NodeRef& node, const ScalarRef& value, const std::string& comment);

/// Sets every logical cell of `node` to `value`.
StmtRef fill_logical(const NodeRef& node, const ScalarRef& value, const std::string& comment);

}  // namespace cannl::ir::lowering
