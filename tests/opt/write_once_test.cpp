// Zeroed, then written once (opt/write_once.h): a max-pool-like gradient (windows that do not
// overlap) loses its ZeroOut and reads its target as zero, with the interpreter's bits; a
// reduction, a nest that leaves cells unwritten, a read between the ZeroOut and the nest, and a
// read of another cell of the target keep the ZeroOut.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cannl/ir/verify.h"
#include "opt/rewrite_test_util.h"
#include "opt/write_once.h"

namespace cannl::opt {
namespace {

using ir::AxisIndex;
using ir::DType;
using ir::Op;
using testing::routine_of;
using testing::run_and_read;

AxisIndex it(ir::Symbol s) { return AxisIndex::iterator(s); }

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// dx[2h + p, 2w + q] += dy[h, w] * mask[2h + p, 2w + q] over h, w < n and p, q < 2 (or < `window`):
// every cell of dx [2n, 2n] once when the window is 2.
struct Pooling {
  std::int64_t n = 4;
  ir::NodeRef dx = ir::make_node("dx", DType::F32, {2 * n, 2 * n});
  ir::NodeRef dy = ir::make_node("dy", DType::F32, {n, n});
  ir::NodeRef mask = ir::make_node("mask", DType::F32, {2 * n, 2 * n});  // 1 at each window's maximum
  ir::NodeRef other = ir::make_node("other", DType::F32, {2 * n, 2 * n});

  ir::StmtRef nest(std::int64_t window = 2, std::int64_t h_end = 0) const {
    const ir::Symbol h = ir::fresh_symbol(), w = ir::fresh_symbol(), p = ir::fresh_symbol(), q = ir::fresh_symbol();
    const std::vector<AxisIndex> at{AxisIndex{{{2, h}, {1, p}}, 0}, AxisIndex{{{2, w}, {1, q}}, 0}};
    const std::vector<AxisIndex> mask_at{AxisIndex{{{2, h}, {1, p}}, 0}, AxisIndex{{{2, w}, {1, q}}, 0}};
    const auto pick = ir::apply(Op::Mul, DType::F32, {ir::get(dy, {it(h), it(w)}), ir::get(mask, mask_at)});
    const auto acc = ir::apply(Op::Add, DType::F32, {ir::get(dx, at), pick});
    return ir::for_loop(h, 0, h_end > 0 ? h_end : n,
                        ir::for_loop(w, 0, n, ir::for_loop(p, 0, window, ir::for_loop(q, 0, window, ir::set(dx, at, acc)))));
  }

  void fill(interp::testing::TestMemory& mem) const {
    std::vector<float> v(static_cast<std::size_t>(n * n));
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = k % 5 == 2 ? -0.0f : std::sin(static_cast<float>(k)) * 3.0f;
    mem.fill(dy, v);
    std::vector<float> m(static_cast<std::size_t>(4 * n * n));
    for (std::size_t k = 0; k < m.size(); ++k) m[k] = k % 3 == 0 ? 1.0f : 0.0f;
    mem.fill(mask, m);
    mem.fill(dx, std::vector<float>(static_cast<std::size_t>(4 * n * n), 7.0f));  // stale values the ZeroOut clears
  }
};

std::vector<std::uint32_t> bits(const std::vector<float>& v) {
  std::vector<std::uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
  return out;
}

TEST(WriteOnce, APoolingGradientAssignsEveryCellOnce) {
  const Pooling pool;
  const ir::LoweredRoutine r = routine_of(ir::seq({ir::zero_out(pool.dx), pool.nest()}));
  const ir::LoweredRoutine out = assign_written_once(r);
  ir::verify(out);
  const std::string text = ir::print_loop_ir(out);
  EXPECT_FALSE(has(text, "zero_out")) << text;
  EXPECT_FALSE(has(text, "add(dx")) << text;
  const auto fill = [&](interp::testing::TestMemory& m) { pool.fill(m); };
  EXPECT_EQ(bits(run_and_read<float>(out, fill, pool.dx)), bits(run_and_read<float>(r, fill, pool.dx)));
}

TEST(WriteOnce, UnrelatedStatementsBetweenStayPut) {
  const Pooling pool;
  const ir::Symbol i = ir::fresh_symbol();
  const ir::StmtRef unrelated = ir::for_loop(i, 0, 8, ir::set(pool.other, {AxisIndex::fixed(0), it(i)}, ir::constant(1.0, DType::F32)));
  const ir::LoweredRoutine out = assign_written_once(routine_of(ir::seq({ir::zero_out(pool.dx), unrelated, pool.nest()})));
  EXPECT_FALSE(has(ir::print_loop_ir(out), "zero_out")) << ir::print_loop_ir(out);
}

TEST(WriteOnce, OtherWritesKeepTheZeroOut) {
  const Pooling pool;
  const auto keeps = [](const ir::LoweredRoutine& r) {
    const ir::LoweredRoutine out = assign_written_once(r);
    EXPECT_EQ(ir::print_loop_ir(out), ir::print_loop_ir(r));
  };
  // Overlapping windows (3 x 3 with stride 2): some cells are written twice.
  keeps(routine_of(ir::seq({ir::zero_out(pool.dx), pool.nest(3)})));
  // Half the rows: the other half must stay zero.
  keeps(routine_of(ir::seq({ir::zero_out(pool.dx), pool.nest(2, pool.n / 2)})));
  // A read of dx between the ZeroOut and the nest sees the zeros.
  const ir::Symbol i = ir::fresh_symbol();
  const ir::StmtRef read = ir::for_loop(i, 0, 8, ir::set(pool.other, {AxisIndex::fixed(0), it(i)},
                                                        ir::get(pool.dx, {AxisIndex::fixed(0), it(i)})));
  keeps(routine_of(ir::seq({ir::zero_out(pool.dx), read, pool.nest()})));
  // A reduction: several iterations add into each cell.
  const ir::Symbol a = ir::fresh_symbol(), b = ir::fresh_symbol();
  const auto sum = ir::apply(Op::Add, DType::F32, {ir::get(pool.dy, {AxisIndex::fixed(0), it(a)}), ir::get(pool.dy, {it(a), it(b)})});
  const ir::StmtRef reduction =
      ir::for_loop(a, 0, pool.n, ir::for_loop(b, 0, pool.n, ir::set(pool.dy, {AxisIndex::fixed(0), it(a)}, sum)));
  keeps(routine_of(ir::seq({ir::zero_out(pool.dy), reduction})));
}

}  // namespace
}  // namespace cannl::opt
