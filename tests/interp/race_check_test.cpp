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
  KernelRaceCheck check(ir::kernel_geometry(body), body);
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

// A local is each thread's own on a GPU: v := a[0] on the first thread (a one-iteration
// Workgroup loop), then y[j] = v on every thread, stores a value the other threads never
// computed; set outside the thread loops (by every thread), it is sound. After a thread loop
// setting it, only the thread of the last iteration holds the interpreter's value. Threads
// computing copies they do not hold are no error while only holders store them.
TEST(KernelRaceCheck, ANodeWrittenFromALocalCopyTheThreadDoesNotHoldIsReported) {
  const auto a = ir::make_node("a", DType::F32, {8}), y = ir::make_node("y", DType::F32, {8});
  const int v = ir::fresh_scope_id();
  const ir::Symbol j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto set_v = ir::set_local(v, ir::get(a, {ir::AxisIndex::fixed(0)}));
  const auto read_v = ir::for_loop(j, 0, 8, ir::set(y, {it(j)}, ir::get_local(v, DType::F32)), AxisType::Workgroup);
  const auto declare = ir::declare_local(v, DType::F32, false);
  EXPECT_EQ(race_in(ir::seq({declare, set_v, read_v})), "");
  const auto first_thread = ir::for_loop(k, 0, 1, set_v, AxisType::Workgroup);
  const std::string race = race_in(ir::seq({declare, first_thread, read_v}));
  EXPECT_NE(race.find("race on y element 1: written by block (*, *, *) thread (1, *, *) from a scalar local v" +
                      std::to_string(v) + " whose copy only block (*, *, *) thread (0, *, *) holds"),
            std::string::npos)
      << race;
  const auto each_thread = ir::for_loop(k, 0, 8, ir::set_local(v, ir::get(a, {it(k)})), AxisType::Workgroup);
  const auto store_first = [&] {
    return ir::for_loop(ir::fresh_symbol(), 0, 1, ir::set(y, {ir::AxisIndex::fixed(0)}, ir::get_local(v, DType::F32)),
                        AxisType::Workgroup);
  };
  EXPECT_NE(race_in(ir::seq({declare, each_thread, store_first()})).find("only block (*, *, *) thread (7, *, *) holds"),
            std::string::npos);
  // Every thread adds to its copy (a serial loop outside the thread loops); the first thread,
  // the only one holding the whole sum, stores it.
  const ir::Symbol m = ir::fresh_symbol();
  const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), ir::get(a, {it(m)})});
  const auto everyone_adds = ir::for_loop(m, 1, 8, ir::set_local(v, add));
  EXPECT_EQ(race_in(ir::seq({declare, first_thread, everyone_adds, store_first()})), "");
}

// The stale copy read first in an expression still flows into the store when a local scope
// evaluated after it in the same expression runs a loop (an inlined sum): y[j] = v + sum_m a[m],
// with v held by the first thread only. The scope's loop and its own local are the expression's
// inner steps, not a new statement.
TEST(KernelRaceCheck, AStaleLocalReadBeforeALocalScopeWithALoopIsStillReported) {
  const auto a = ir::make_node("a", DType::F32, {8}), y = ir::make_node("y", DType::F32, {8});
  const int v = ir::fresh_scope_id(), u = ir::fresh_scope_id();
  const ir::Symbol j = ir::fresh_symbol(), k = ir::fresh_symbol(), m = ir::fresh_symbol();
  const auto declare = ir::declare_local(v, DType::F32, false);
  const auto first_thread = ir::for_loop(k, 0, 1, ir::set_local(v, ir::get(a, {ir::AxisIndex::fixed(0)})), AxisType::Workgroup);
  const auto add_u = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(u, DType::F32), ir::get(a, {it(m)})});
  const auto sum = ir::local_scope(u, DType::F32, ir::for_loop(m, 0, 2, ir::set_local(u, add_u)));
  const auto value = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), sum});
  const auto read_v = ir::for_loop(j, 0, 8, ir::set(y, {it(j)}, value), AxisType::Workgroup);
  const std::string race = race_in(ir::seq({declare, first_thread, read_v}));
  EXPECT_NE(race.find("race on y element 1: written by block (*, *, *) thread (1, *, *) from a scalar local v" +
                      std::to_string(v) + " whose copy only block (*, *, *) thread (0, *, *) holds"),
            std::string::npos)
      << race;
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

// for g Grid: [x[g, j] = a[g, j] (Workgroup j); [barrier];] s[g] = s[g] + x[g, 7 - r]
// (WorkgroupReduce r); then y[g, k] = s[g] (Workgroup k), or that reduction under an If: one
// that reads memory (`a[g, 0] < 1`: the threads might differ), or one on the block index
// (`g < 2`: every thread of a block takes it alike).
enum class Guard { None, ReadsMemory, OnTheBlock };
struct RowReduction {
  bool fill_x = false, barrier_after_fill = false;
  Guard under_if = Guard::None;
};
ir::StmtRef row_reduction(RowReduction shape) {
  const auto a = ir::make_node("a", DType::F32, {2, 8}), x = ir::make_node("x", DType::F32, {2, 8});
  const auto s = ir::make_node("s", DType::F32, {2}), y = ir::make_node("y", DType::F32, {2, 8});
  const ir::Symbol g = ir::fresh_symbol(), j = ir::fresh_symbol(), r = ir::fresh_symbol(), k = ir::fresh_symbol();
  const ir::AxisIndex mirrored{{{-1, r}}, 7};
  const auto sum = ir::apply(ir::Op::Add, DType::F32, {ir::get(s, {it(g)}), ir::get(x, {it(g), mirrored})});
  ir::StmtRef reduce = ir::for_loop(r, 0, 8, ir::set(s, {it(g)}, sum), AxisType::WorkgroupReduce);
  if (shape.under_if == Guard::ReadsMemory)
    reduce = ir::if_then(ir::apply(ir::Op::Cmplt, DType::F32, {ir::get(a, {it(g), ir::AxisIndex::fixed(0)}),
                                                               ir::constant(1, DType::F32)}),
                         reduce);
  if (shape.under_if == Guard::OnTheBlock)
    reduce = ir::if_then(ir::apply(ir::Op::Cmplt, DType::I64, {ir::embed_index(it(g)), ir::constant(2, DType::I64)}),
                         reduce);
  std::vector<ir::StmtRef> body;
  if (shape.fill_x)
    body.push_back(ir::for_loop(j, 0, 8, ir::set(x, {it(g), it(j)}, ir::get(a, {it(g), it(j)})), AxisType::Workgroup));
  if (shape.barrier_after_fill) body.push_back(ir::barrier());
  body.push_back(reduce);
  body.push_back(ir::for_loop(k, 0, 8, ir::set(y, {it(g), it(k)}, ir::get(s, {it(g)})), AxisType::Workgroup));
  return ir::for_loop(g, 0, 2, ir::seq(body), AxisType::Grid);
}

// A block reduction as the GPU renders it: thread r reads the cells of its step, the first thread
// accumulates after a barrier, and a barrier follows, so the block's threads then read the total.
TEST(KernelRaceCheck, ABlockReductionIsWatchedAsRendered) {
  EXPECT_EQ(race_in(row_reduction({})), "");
  EXPECT_EQ(race_in(row_reduction({.fill_x = true, .barrier_after_fill = true})), "");
  // Thread r reads x[g, 7 - r], which thread 7 - r wrote with no barrier between.
  const std::string race = race_in(row_reduction({.fill_x = true}));
  EXPECT_NE(race.find("race on x element 7: written, then read by block (0, *, *) thread (7, *, *) after 0 barriers "
                      "and block (0, *, *) thread (0, *, *) after 0 barriers"),
            std::string::npos)
      << race;
}

// The strided form (thread r folds its steps q over a serial loop, then the tree) inside another
// slot's thread loop (a reduction per j, each accumulated by thread (0, j)): no race, and the
// total read by every thread after the reduction's last barrier.
TEST(KernelRaceCheck, StridedBlockReductionsInAnotherSlotsLoopAreWatchedAsRendered) {
  const auto x = ir::make_node("x", DType::F32, {2, 12}), s = ir::make_node("s", DType::F32, {2});
  const auto y = ir::make_node("y", DType::F32, {2, 4});
  const ir::Symbol j = ir::fresh_symbol(), r = ir::fresh_symbol(), q = ir::fresh_symbol(), k = ir::fresh_symbol();
  const ir::AxisIndex step{{{4, q}, {1, r}}, 0};
  const auto sum = ir::apply(ir::Op::Add, DType::F32, {ir::get(s, {it(j)}), ir::get(x, {it(j), step})});
  const auto reduce =
      ir::for_loop(r, 0, 4, ir::for_loop(q, 0, 3, ir::set(s, {it(j)}, sum)), AxisType::WorkgroupReduce);
  const auto spread = ir::for_loop(k, 0, 4, ir::set(y, {it(j), it(k)}, ir::get(s, {it(j)})), AxisType::Workgroup);
  EXPECT_EQ(race_in(ir::for_loop(j, 0, 2, ir::seq({reduce, spread}), AxisType::Workgroup)), "");
}

// Under an If whose condition might differ between the threads the printer runs the reduction
// serially on the first thread, with no barrier: the threads that read the total after it race
// with its writes. Under an If on the block index it stays a tree with its barriers.
TEST(KernelRaceCheck, AReductionUnderAnIfRunsOnTheFirstThreadWithoutBarriersUnlessEveryThreadTakesTheIf) {
  const std::string race = race_in(row_reduction({.under_if = Guard::ReadsMemory}));
  EXPECT_NE(race.find("race on s element 0: written, then read by block (0, *, *) thread (0, *, *) after 0 barriers "
                      "and block (0, *, *) thread (1, *, *) after 0 barriers"),
            std::string::npos)
      << race;
  EXPECT_EQ(race_in(row_reduction({.under_if = Guard::OnTheBlock})), "");
  // The tree's reads of x[g, 7 - r] by thread r race with thread 7 - r's writes, as without the If.
  const std::string tree_race = race_in(row_reduction({.fill_x = true, .under_if = Guard::OnTheBlock}));
  EXPECT_NE(tree_race.find("race on x element 7: written, then read by block (0, *, *) thread (7, *, *)"), std::string::npos)
      << tree_race;
}

// for j Workgroup [0, 4): x[j] = a[j]; for k Workgroup [0, 2): { y[k] = a[k]; barrier }: threads
// 2 and 3 of the block never reach the barrier.
TEST(KernelRaceCheck, ABarrierInAShortThreadLoopIsReported) {
  const auto a = ir::make_node("a", DType::F32, {4}), x = ir::make_node("x", DType::F32, {4});
  const auto y = ir::make_node("y", DType::F32, {4});
  const ir::Symbol j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto all = ir::for_loop(j, 0, 4, ir::set(x, {it(j)}, ir::get(a, {it(j)})), AxisType::Workgroup);
  const auto copy = ir::set(y, {it(k)}, ir::get(a, {it(k)}));
  const std::string race = race_in(ir::seq({all, ir::for_loop(k, 0, 2, ir::seq({copy, ir::barrier()}), AxisType::Workgroup)}));
  EXPECT_NE(race.find("a barrier not every thread of the block reaches: block (*, *, *) thread (0, *, *) is in a thread "
                      "loop of 2 iterations on slot 0 of 4 threads"),
            std::string::npos)
      << race;
  EXPECT_EQ(race_in(ir::seq({all, ir::for_loop(k, 0, 4, ir::seq({copy, ir::barrier()}), AxisType::Workgroup)})), "");
}

// A WorkgroupReduce loop out of the tree form (two statements) with a barrier in it runs on the
// slot's first thread: the others never reach the barrier, however long the loop.
TEST(KernelRaceCheck, ABarrierInAReductionRunOnTheFirstThreadIsReported) {
  const auto a = ir::make_node("a", DType::F32, {4}), s = ir::make_node("s", DType::F32, {1});
  const auto c = ir::make_node("c", DType::F32, {1});
  const ir::Symbol r = ir::fresh_symbol();
  const auto zero = ir::AxisIndex::fixed(0);
  const auto sum = ir::apply(ir::Op::Add, DType::F32, {ir::get(s, {zero}), ir::get(a, {it(r)})});
  const auto count = ir::apply(ir::Op::Add, DType::F32, {ir::get(c, {zero}), ir::constant(1, DType::F32)});
  const auto body = ir::seq({ir::set(s, {zero}, sum), ir::barrier(), ir::set(c, {zero}, count)});
  const std::string race = race_in(ir::for_loop(r, 0, 4, body, AxisType::WorkgroupReduce));
  EXPECT_NE(race.find("a barrier not every thread of the block reaches: block (*, *, *) thread (0, *, *) is in a "
                      "reduction run on the first thread of slot 0 of 4 threads"),
            std::string::npos)
      << race;
}

}  // namespace
}  // namespace cannl::interp
