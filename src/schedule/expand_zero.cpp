// Expand_zero (semantics-backend.md 8.2): a whole-node ZeroOut becomes a loop nest storing 0 in
// every cell (padding included), which the annotators can then parallelize like computation.
// Same cells, same value: always legal.
#include "cannl/ir/tree_mapper.h"
#include "cannl/support/error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

ir::StmtRef zero_nest(const ir::NodeRef& node) {
  std::vector<ir::Symbol> symbols;
  std::vector<ir::AxisIndex> index;
  for (std::size_t d = 0; d < node->dims.size(); ++d) {
    symbols.push_back(ir::fresh_symbol());
    index.push_back(ir::AxisIndex::iterator(symbols.back()));
  }
  ir::StmtRef body = ir::set(node, index, ir::constant(0, ir::compute_dtype(node->dtype)), "expand_zero");
  for (std::size_t d = node->dims.size(); d-- > 0;) body = ir::for_loop(symbols[d], 0, node->dims[d], body);
  return body;
}

class ZeroExpander : public ir::TreeMapper {
 public:
  explicit ZeroExpander(int node_id) : node_id_(node_id) {}
  int expanded = 0;
  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    const auto* z = std::get_if<ir::ZeroOut>(&s->node);
    if (!z || z->node->id != node_id_) return map_children(s);
    ++expanded;
    return zero_nest(z->node);
  }

 private:
  int node_id_;
};

}  // namespace

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const ExpandZero& t) {
  ZeroExpander expander(t.node_id);
  ir::StmtRef body = expander.map_stmt(r.body);
  if (expander.expanded == 0) {
    std::string zeroed;
    ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
      if (const auto* z = std::get_if<ir::ZeroOut>(&s.node))
        zeroed += (zeroed.empty() ? "" : ", ") + z->node->debug_name() + " (n" + std::to_string(z->node->id) + ")";
    });
    throw ScheduleError("expand_zero n" + std::to_string(t.node_id) + ": routine '" + r.name +
                        "' has no zero_out of that node; legal alternatives: " +
                        (zeroed.empty() ? std::string("none (no zero_out)") : zeroed));
  }
  return with_body(r, body);
}

// In traces: expand_zero <node>
std::string_view trace_name(Kind<ExpandZero>) { return "expand_zero"; }

void print_args(StepWriter& out, const ExpandZero& t) { out.node(t.node_id); }

ExpandZero parse_args(const StepReader& in, Kind<ExpandZero>) { return ExpandZero{in.node(1)}; }

}  // namespace cannl::schedule::detail
