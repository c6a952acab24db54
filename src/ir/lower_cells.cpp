// Loop nests over the logical cells and the padding margins of a node (see lower_cells.h).
#include "lower_cells.h"

#include "cannl/support/error.h"

namespace cannl::ir::lowering {

namespace {

struct Range {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

/// One loop per range of length != 1 (a length-1 range is the fixed index `begin`); `body`
/// receives the index of each cell.
StmtRef loop_over_ranges(const std::vector<Range>& ranges, const CellBody& body) {
  std::vector<AxisIndex> index;
  std::vector<std::pair<Symbol, Range>> loops;
  for (const Range& r : ranges) {
    if (r.end - r.begin == 1) {
      index.push_back(AxisIndex::fixed(r.begin));
      continue;
    }
    const Symbol s = fresh_symbol();
    index.push_back(AxisIndex::iterator(s));
    loops.emplace_back(s, r);
  }
  StmtRef stmt = body(index);
  for (auto it = loops.rbegin(); it != loops.rend(); ++it)
    stmt = for_loop(it->first, it->second.begin, it->second.end, stmt);
  return stmt;
}

std::int64_t left_of(const TensorNode& node, std::size_t axis) {
  return node.padding.empty() ? 0 : node.padding[axis].left;
}

}  // namespace

StmtRef loop_over_logical(const std::vector<std::int64_t>& dims, const CellBody& body) {
  std::vector<Range> ranges;
  for (auto d : dims) ranges.push_back({0, d});
  return loop_over_ranges(ranges, body);
}

std::vector<AxisIndex> buffer_index(const TensorNode& node, std::vector<AxisIndex> logical,
                                    const std::string& context) {
  if (logical.size() != node.dims.size())
    throw InternalError("lowering `" + context + "`: node " + node.debug_name() + " has rank " +
                        std::to_string(node.dims.size()) + " but is indexed with " +
                        std::to_string(logical.size()) + " axes");
  internal_check(node.padding.empty() || node.padding.size() == node.dims.size(),
                 [&] { return "node " + node.debug_name() + ": padding rank differs from dims rank"; });
  for (std::size_t k = 0; k < logical.size(); ++k) logical[k].offset += left_of(node, k);
  return logical;
}

StmtRef fill_margins(const NodeRef& node, const ScalarRef& value, const std::string& comment) {
  if (!node->is_padded()) return nullptr;
  const auto logical = node->logical_dims();
  const std::size_t rank = node->dims.size();
  std::vector<StmtRef> regions;
  const CellBody store = [&](const std::vector<AxisIndex>& idx) {
    return set(node, idx, value, comment);
  };
  // Region k: axes before k in the interior, axis k in its left or right margin, axes after k over
  // the whole buffer. The regions partition the margin cells, so each is written once.
  for (std::size_t k = 0; k < rank; ++k) {
    std::vector<Range> ranges;
    for (std::size_t j = 0; j < k; ++j) ranges.push_back({left_of(*node, j), left_of(*node, j) + logical[j]});
    ranges.push_back({});
    for (std::size_t j = k + 1; j < rank; ++j) ranges.push_back({0, node->dims[j]});
    const std::int64_t left = left_of(*node, k);
    for (Range margin : {Range{0, left}, Range{left + logical[k], node->dims[k]}}) {
      if (margin.end <= margin.begin) continue;
      ranges[k] = margin;
      regions.push_back(loop_over_ranges(ranges, store));
    }
  }
  return regions.size() == 1 ? regions[0] : seq(std::move(regions));
}

StmtRef fill_logical(const NodeRef& node, const ScalarRef& value, const std::string& comment) {
  return loop_over_logical(node->logical_dims(), [&](const std::vector<AxisIndex>& idx) {
    return set(node, buffer_index(*node, idx, comment), value, comment);
  });
}

}  // namespace cannl::ir::lowering
