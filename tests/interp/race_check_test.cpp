// The GPU kernel race checker (cannl/interp/race_check.h) is an oracle of the GPU tests and the
// gpu-emulator backend: it must report the races a GPU would have, and none where barriers or the
// hardware order the accesses.
#include "cannl/interp/race_check.h"

#include <gtest/gtest.h>

#include "interp/test_memory.h"

namespace cannl::interp {
namespace {

using ir::AxisType;
using ir::DType;

ir::AxisIndex it(ir::Symbol s) { return ir::AxisIndex::iterator(s); }

// The race the checker sees when kernel `body` runs on the interpreter ("" when none).
std::string race_in(const ir::StmtRef& body) {
  testing::TestMemory mem;  // zeroed: the checker looks at cells, not values
  for (const ir::NodeRef& n : ir::nodes_of(body)) mem.add(n);
  KernelRaceCheck check(ir::kernel_geometry(body));
  run({"kernel", body, {}}, mem.buffers(), {}, &check);
  return check.race();
}

// for g Grid: x[g, j] = a[g, j] (Workgroup j); [barrier]; y[g, k] = x[other(g), 7 - k] (Workgroup k)
ir::StmtRef mirrored_rows(bool barrier, bool other_block) {
  const auto a = ir::make_node("a", DType::F32, {2, 8}), x = ir::make_node("x", DType::F32, {2, 8});
  const auto y = ir::make_node("y", DType::F32, {2, 8});
  const ir::Symbol g = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const ir::AxisIndex row = other_block ? ir::AxisIndex{{{-1, g}}, 1} : it(g);
  const ir::AxisIndex mirrored{{{-1, k}}, 7};
  std::vector<ir::StmtRef> body{
      ir::for_loop(j, 0, 8, ir::set(x, {it(g), it(j)}, ir::get(a, {it(g), it(j)})), AxisType::Workgroup),
      ir::for_loop(k, 0, 8, ir::set(y, {it(g), it(k)}, ir::get(x, {row, mirrored})), AxisType::Workgroup)};
  if (barrier) body.insert(body.begin() + 1, ir::barrier());
  return ir::for_loop(g, 0, 2, ir::seq(body), AxisType::Grid);
}

TEST(KernelRaceCheck, ThreadsOfABlockRaceUnlessABarrierSeparatesThem) {
  const std::string race = race_in(mirrored_rows(false, false));
  EXPECT_NE(race.find("race on x element 7: written, then read by block (0, *, *) thread (7, *, *) after 0 "
                      "barriers and block (0, *, *) thread (0, *, *) after 0 barriers"),
            std::string::npos)
      << race;
  EXPECT_EQ(race_in(mirrored_rows(true, false)), "");
}

TEST(KernelRaceCheck, ABarrierDoesNotOrderTwoBlocks) {
  // Block 0 reads row 1 of x before block 1 writes it (in the interpreter's order).
  const std::string race = race_in(mirrored_rows(true, true));
  EXPECT_NE(race.find("race on x element 8: read, then written by block (0, *, *) thread (7, *, *) after 1 barriers "
                      "and block (1, *, *) thread (0, *, *) after 0 barriers, two blocks of one launch"),
            std::string::npos)
      << race;
}

// for g Grid: s[g] = a[g, 0] outside the block's thread loops, then y[g, j] = a[g, j] (Workgroup
// j): every thread of the block writes s[g]; in a one-iteration Workgroup loop only the first.
TEST(KernelRaceCheck, AWriteOutsideTheThreadLoopsOfABlockIsEveryThreadsWrite) {
  const auto a = ir::make_node("a", DType::F32, {2, 8}), s = ir::make_node("s", DType::F32, {2});
  const auto y = ir::make_node("y", DType::F32, {2, 8});
  const ir::Symbol g = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto store_s = ir::set(s, {it(g)}, ir::get(a, {it(g), ir::AxisIndex::fixed(0)}));
  const auto scale = ir::for_loop(j, 0, 8, ir::set(y, {it(g), it(j)}, ir::get(a, {it(g), it(j)})), AxisType::Workgroup);
  const std::string race = race_in(ir::for_loop(g, 0, 2, ir::seq({store_s, scale}), AxisType::Grid));
  EXPECT_NE(race.find("race on s element 0: written by several threads at once"), std::string::npos) << race;
  const auto first_thread = ir::for_loop(ir::fresh_symbol(), 0, 1, store_s, AxisType::Workgroup);
  EXPECT_EQ(race_in(ir::for_loop(g, 0, 2, ir::seq({first_thread, scale}), AxisType::Grid)), "");
}

// for g Grid: t[0] += a[g]: every block accumulates into one cell.
TEST(KernelRaceCheck, BlocksAccumulatingIntoOneCellRace) {
  const auto a = ir::make_node("a", DType::F32, {4}), t = ir::make_node("t", DType::F32, {1});
  const ir::Symbol g = ir::fresh_symbol();
  const auto zero = ir::AxisIndex::fixed(0);
  const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get(t, {zero}), ir::get(a, {it(g)})});
  const std::string race = race_in(ir::for_loop(g, 0, 4, ir::set(t, {zero}, add), AxisType::Grid));
  EXPECT_NE(race.find("race on t element 0: written, then read by block (0, *, *)"), std::string::npos) << race;
  // One block, the same statement in a serial loop: one thread in program order.
  EXPECT_EQ(race_in(ir::for_loop(g, 0, 4, ir::set(t, {zero}, add))), "");
}

}  // namespace
}  // namespace cannl::interp
