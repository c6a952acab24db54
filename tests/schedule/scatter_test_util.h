#pragma once
// An embedding gradient for the scatter tests (schedule and GPU layers): the token ids computed
// in the routine (so that the interpreter and a compiled backend start from the same memory as
// run_interp and test_inputs give), then the scatter
//
//   for c < channels: for t < tokens: table[?ids[t], c] += dy[t, c]     (row_axis 0)
//   for c < channels: for t < tokens: table[c, ?ids[t]] += dy[t, c]     (row_axis 1, GPT-2's wte)
//
// ids[t] = (37 t + 5) mod (rows + 3) - 1, plus 0.5 on every 11th token: every row in
// [-1, rows + 1] comes round every rows + 3 tokens (37 is coprime to the sizes used), so rows
// repeat, each bucket's first and last row is hit, and -1, rows, rows + 1 and the fractional
// ids select no row.

#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {

struct EmbeddingGradient {
  std::int64_t rows, channels, tokens;
  int row_axis = 0;
  ir::NodeRef ids = ir::make_node("ids", ir::DType::F32, {tokens});
  ir::NodeRef dy = ir::make_node("dy", ir::DType::F32, {tokens, channels});
  ir::NodeRef table = ir::make_node("table", ir::DType::F32,
                                    row_axis == 0 ? std::vector<std::int64_t>{rows, channels}
                                                  : std::vector<std::int64_t>{channels, rows});
  ir::Symbol id = ir::fresh_symbol(), c = ir::fresh_symbol(), t = ir::fresh_symbol();

  EmbeddingGradient(std::int64_t rows_, std::int64_t channels_, std::int64_t tokens_, int row_axis_ = 0)
      : rows(rows_), channels(channels_), tokens(tokens_), row_axis(row_axis_) {}

  ir::StmtRef make_ids() const {
    using ir::DType;
    using ir::Op;
    const auto cycle = ir::apply(Op::Mod, DType::I64, {ir::embed_index({{{37, id}}, 5}), ir::constant(static_cast<double>(rows + 3), DType::I64)});
    const auto eleventh = ir::apply(Op::Cmpeq, DType::I64, {ir::apply(Op::Mod, DType::I64, {ir::embed_index(it(id)), ir::constant(11, DType::I64)}),
                                                            ir::constant(0, DType::I64)});
    const auto half = ir::apply(Op::Mul, DType::F32, {eleventh, ir::constant(0.5, DType::F32)});
    const auto value = ir::apply(Op::Add, DType::F32, {ir::apply(Op::Sub, DType::F32, {cycle, ir::constant(1, DType::F32)}), half});
    return ir::for_loop(id, 0, tokens, ir::set(ids, {it(id)}, value));
  }
  ir::StmtRef scatter_nest() const {
    std::vector<ir::AxisIndex> at{ir::AxisIndex::fixed(0), it(c)};
    if (row_axis == 1) std::swap(at[0], at[1]);
    const auto update = ir::set_dynamic(table, at, row_axis, ir::get(ids, {it(t)}), ir::get(dy, {it(t), it(c)}));
    return ir::for_loop(c, 0, channels, ir::for_loop(t, 0, tokens, update));
  }
  /// dy[t, c] = 1 / (t + 3c + 3): a row's sum of these rounds differently in another order, so
  /// running a row's tokens out of order changes bits.
  ir::StmtRef make_dy() const {
    const ir::Symbol u = ir::fresh_symbol(), k = ir::fresh_symbol();
    const auto value = ir::apply(ir::Op::Div, ir::DType::F32,
                                 {ir::constant(1, ir::DType::F32), ir::embed_index({{{1, u}, {3, k}}, 3})});
    return ir::for_loop(u, 0, tokens, ir::for_loop(k, 0, channels, ir::set(dy, {it(u), it(k)}, value)));
  }
  /// The ids, then the scatter of dy as the caller left it in memory.
  ir::LoweredRoutine routine() const { return {"embedding_grad", ir::seq({make_ids(), scatter_nest()}), {}}; }
  /// The ids, dy, then the scatter: order-sensitive sums.
  ir::LoweredRoutine order_sensitive_routine() const {
    return {"embedding_grad", ir::seq({make_ids(), make_dy(), scatter_nest()}), {}};
  }
};

}  // namespace cannl::schedule::testing
