// Kernel fission: segments in launch order, cut at cross-block dependencies and whole-node
// zeroing, producer/consumer nests with an aligned parallel prefix in one kernel (with a
// workgroup barrier when threads of a block read each other's cells), serial statements
// coalesced but never with parallel ones, the launch checked against the device (ScheduleError)
// and every write under loops of every active hardware slot (InternalError).
#include <gtest/gtest.h>

#include "../interp/test_memory.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/fission.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/schedule/transforms.h"
#include "schedule/gpu_test_util.h"

namespace cannl::schedule::testing {
namespace {

using ir::AxisIndex;
using ir::AxisType;
using ir::DType;
using Kind = Segment::Kind;

// out[i, j] = in[row(i), col(j)] * 2 over an m x n nest (fresh loops); row / col map the loop
// indices (the identity, or a reversal m-1-i).
struct Map2 {
  ir::NodeRef out, in;
  bool reverse_rows = false, reverse_cols = false;
  ir::StmtRef nest() const {
    const std::int64_t m = out->dims[0], n = out->dims[1];
    const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
    const AxisIndex row = reverse_rows ? AxisIndex{{{-1, i}}, m - 1} : it(i);
    const AxisIndex col = reverse_cols ? AxisIndex{{{-1, j}}, n - 1} : it(j);
    const auto value = ir::apply(ir::Op::Mul, DType::F32, {ir::get(in, {row, col}), ir::constant(2, DType::F32)});
    return ir::for_loop(i, 0, m, ir::for_loop(j, 0, n, ir::set(out, {it(i), it(j)}, value)));
  }
};

ir::NodeRef matrix(const std::string& name, std::int64_t m, std::int64_t n) {
  return ir::make_node(name, DType::F32, {m, n});
}

// The routine scheduled and lowered for the test GPU, fissioned, and checked bitwise against
// the unscheduled routine.
std::vector<Segment> gpu_segments(const ir::LoweredRoutine& r, std::int64_t block_size = 256, bool enabled = true) {
  const ir::Target t = gpu_test_target();
  const ir::LoweredRoutine low = lower_for_target(default_gpu_schedule(r, {t, block_size, 16}), t);
  std::vector<Segment> segments = fission(low, t, enabled);
  const NodeBytes expected = run_interp(r);
  for (const Order order : {Order::Interpreter, Order::BlocksForward, Order::BlocksReversed})
    EXPECT_EQ(compare(expected, run_segments(r, segments, order), Tolerance::Bitwise), "")
        << "order " << static_cast<int>(order) << "\n" << ir::print_loop_ir(low);
  return segments;
}

std::string kinds(const std::vector<Segment>& segments) {
  std::string out;
  for (const Segment& s : segments)
    out += s.kind == Kind::Zero ? "Z" : s.geometry.serial() ? "S" : std::holds_alternative<ir::Seq>(s.body->node) ? "M" : "K";
  return out;  // Z zero, S serial kernel, K one parallel statement, M merged parallel statements
}

TEST(Fission, ProducerAndConsumerOfTheSameCellsShareAKernel) {
  const auto x = matrix("x", 8, 600), y = matrix("y", 8, 600), z = matrix("z", 8, 600);
  const ir::LoweredRoutine r{"chain", ir::seq({Map2{y, x}.nest(), Map2{z, y}.nest()}), {}};
  const auto segments = gpu_segments(r);
  ASSERT_EQ(kinds(segments), "M");
  EXPECT_EQ(merge_counts(segments).with_barrier, 0) << ir::print_stmt(segments[0].body);
  EXPECT_EQ(segments[0].geometry.grid, (std::array<std::int64_t, 3>{3, 8, 1}));
  EXPECT_EQ(segments[0].geometry.block, (std::array<std::int64_t, 3>{256, 1, 1}));
}

TEST(Fission, TwoDimensionalBlocksAlignThroughTheirGuards) {
  // 10 columns: blocks of 10 x 25 threads, the rows' split guarded (25 does not divide 64).
  const auto x = matrix("x", 64, 10), y = matrix("y", 64, 10), z = matrix("z", 64, 10);
  const ir::LoweredRoutine r{"narrow", ir::seq({Map2{y, x}.nest(), Map2{z, y}.nest()}), {}};
  const auto segments = gpu_segments(r);
  ASSERT_EQ(kinds(segments), "M");
  EXPECT_EQ(merge_counts(segments).with_barrier, 0) << ir::print_stmt(segments[0].body);
  EXPECT_EQ(segments[0].geometry.block, (std::array<std::int64_t, 3>{10, 25, 1}));
  EXPECT_EQ(segments[0].geometry.grid, (std::array<std::int64_t, 3>{3, 1, 1}));
}

TEST(Fission, NestsIndexedByAStaticAlignLikeAnyOther) {
  // y[i, j] = x[b, i, j] * 2, z[i, j] = y[i, j] * 2 for the batch b bound at run time.
  const ir::StaticSymbol batch{ir::fresh_symbol(), 3, "batch"};
  const auto x = ir::make_node("x", DType::F32, {3, 8, 300});
  const auto y = matrix("y", 8, 300), z = matrix("z", 8, 300);
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto read = ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, {it(batch.symbol), it(i), it(j)}), ir::constant(2, DType::F32)});
  const auto first = ir::for_loop(i, 0, 8, ir::for_loop(j, 0, 300, ir::set(y, {it(i), it(j)}, read)));
  const ir::LoweredRoutine r{"batched", ir::seq({first, Map2{z, y}.nest()}), {batch}};
  const ir::Target t = gpu_test_target();
  const auto segments = fission(lower_for_target(default_gpu_schedule(r, {t, 256, 16}), t), t);
  ASSERT_EQ(kinds(segments), "M");
  for (const Order order : {Order::Interpreter, Order::BlocksForward, Order::BlocksReversed})
    EXPECT_EQ(compare(run_interp(r, {2}), run_segments(r, segments, order, {2}), Tolerance::Bitwise), "");
}

TEST(Fission, ConsumerOfItsBlocksCellsGetsABarrier) {
  // z reads its row of y backwards: the same block, other threads.
  const auto x = matrix("x", 8, 200), y = matrix("y", 8, 200), z = matrix("z", 8, 200);
  const ir::LoweredRoutine r{"reversed_cols", ir::seq({Map2{y, x}.nest(), Map2{z, y, false, true}.nest()}), {}};
  const auto segments = gpu_segments(r);
  ASSERT_EQ(kinds(segments), "M");
  EXPECT_EQ(merge_counts(segments).with_barrier, 1);
  EXPECT_TRUE(has(ir::print_stmt(segments[0].body), "barrier")) << ir::print_stmt(segments[0].body);
}

TEST(Fission, ConsumerOfOtherBlocksCellsStartsAKernel) {
  const auto x = matrix("x", 8, 200), y = matrix("y", 8, 200), z = matrix("z", 8, 200);
  // z reads y's rows backwards (another block's), then w overwrites x, which y's nest read.
  const auto w = Map2{x, z};
  const ir::LoweredRoutine r{"reversed_rows", ir::seq({Map2{y, x}.nest(), Map2{z, y, true}.nest(), w.nest()}), {}};
  EXPECT_EQ(kinds(gpu_segments(r)), "KM");
  // Writing cells the kernel read in another block (x read reversed) is cut as well.
  const ir::LoweredRoutine war{"war", ir::seq({Map2{y, x, true}.nest(), Map2{x, z}.nest()}), {}};
  EXPECT_EQ(kinds(gpu_segments(war)), "KK");
}

TEST(Fission, IndependentNestsShareAKernelRunningEachWriteOnce) {
  const auto a = matrix("a", 8, 600), b = matrix("b", 8, 600), c = matrix("c", 8, 300), d = matrix("d", 8, 300);
  const ir::LoweredRoutine same_slots{"two", ir::seq({Map2{b, a}.nest(), Map2{d, c}.nest()}), {}};
  const auto segments = gpu_segments(same_slots);
  ASSERT_EQ(kinds(segments), "M");
  EXPECT_EQ(segments[0].geometry.grid, (std::array<std::int64_t, 3>{3, 8, 1}));  // d's nest guarded on x
  // A vector's nest has one Grid slot: it runs in the first row of blocks only (an extent-1
  // Grid loop on slot y), not once per row.
  const auto e = ir::make_node("e", DType::F32, {600}), f = ir::make_node("f", DType::F32, {600});
  const ir::Symbol k = ir::fresh_symbol();
  const auto copy = ir::for_loop(k, 0, 600, ir::set(f, {it(k)}, ir::get(e, {it(k)})));
  const ir::LoweredRoutine fewer{"fewer", ir::seq({Map2{b, a}.nest(), copy}), {}};
  const auto merged = gpu_segments(fewer);
  ASSERT_EQ(kinds(merged), "M");
  EXPECT_TRUE(has(ir::print_stmt(merged[0].body), "in [0, 1) grid:\n  for i")) << ir::print_stmt(merged[0].body);
}

TEST(Fission, IndependentNestsOfOtherBlockShapesStayApart) {
  // Blocks of 32 threads along x, and of 8 x 4: together 32 x 4, three quarters idle in each.
  const auto a = matrix("a", 8, 600), b = matrix("b", 8, 600), c = matrix("c", 64, 8), d = matrix("d", 64, 8);
  const ir::LoweredRoutine r{"shapes", ir::seq({Map2{b, a}.nest(), Map2{d, c}.nest()}), {}};
  const auto segments = gpu_segments(r, 32);
  ASSERT_EQ(kinds(segments), "KK");
  EXPECT_EQ(segments[0].geometry.block, (std::array<std::int64_t, 3>{32, 1, 1}));
  EXPECT_EQ(segments[1].geometry.block, (std::array<std::int64_t, 3>{8, 4, 1}));
}

TEST(Fission, WholeNodeZeroingIsAMemsetAndSerialStatementsCoalesce) {
  RowSum sum(300, 8);
  const auto segments = gpu_segments(sum.routine());
  ASSERT_EQ(kinds(segments), "ZK");
  EXPECT_EQ(segments[0].zeroed, sum.s);
  // Small statements stay serial: adjacent ones share one one-thread kernel, never a parallel one.
  const auto x = matrix("x", 8, 600), y = matrix("y", 8, 600), s = matrix("s", 1, 4);
  const auto one = [&](std::int64_t k) { return ir::set(s, {AxisIndex::fixed(0), AxisIndex::fixed(k)}, ir::constant(k, DType::F32)); };
  const ir::LoweredRoutine mixed{"mixed", ir::seq({one(0), ir::comment("two"), one(1), Map2{y, x}.nest(), one(2)}), {}};
  EXPECT_EQ(kinds(gpu_segments(mixed)), "SKS");
}

TEST(Fission, MemsetOfANodeTheKernelDoesNotTouchGoesFirst) {
  const auto x = matrix("x", 8, 600), y = matrix("y", 8, 600), z = matrix("z", 8, 600);
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto acc = ir::apply(ir::Op::Add, DType::F32, {ir::get(z, {it(i), it(j)}), ir::get(y, {it(i), it(j)})});
  const auto accumulate = ir::for_loop(i, 0, 8, ir::for_loop(j, 0, 600, ir::set(z, {it(i), it(j)}, acc)));
  // z's zeroing goes before y's kernel, so the accumulation into z joins it.
  const ir::LoweredRoutine r{"zero_first", ir::seq({Map2{y, x}.nest(), ir::zero_out(z), accumulate}), {}};
  const auto segments = gpu_segments(r);
  ASSERT_EQ(kinds(segments), "ZM");
  EXPECT_EQ(segments[0].zeroed, z);
  // Zeroing a node the kernel reads ends the kernel first.
  const ir::LoweredRoutine reread{"zero_after", ir::seq({Map2{y, x}.nest(), ir::zero_out(x), Map2{z, x}.nest()}), {}};
  EXPECT_EQ(kinds(gpu_segments(reread)), "KZK");
}

TEST(Fission, DisabledLaunchesEveryStatementAlone) {
  const auto x = matrix("x", 8, 600), y = matrix("y", 8, 600), z = matrix("z", 8, 600), s = matrix("s", 1, 4);
  const auto one = [&](std::int64_t k) { return ir::set(s, {AxisIndex::fixed(0), AxisIndex::fixed(k)}, ir::constant(k, DType::F32)); };
  const ir::LoweredRoutine r{"chain", ir::seq({one(0), one(1), Map2{y, x}.nest(), Map2{z, y}.nest(), ir::zero_out(x)}), {}};
  EXPECT_EQ(kinds(gpu_segments(r, 256, false)), "SSKKZ");
}

TEST(Fission, SmallBlocksGuardExtentsTheyDoNotDivide) {
  const auto x = matrix("x", 45, 100), y = matrix("y", 45, 100), z = matrix("z", 45, 100);
  RowSum sum(45, 100);
  const ir::LoweredRoutine r{"guarded", ir::seq({Map2{y, x}.nest(), Map2{z, y}.nest(), sum.routine().body}), {}};
  const auto segments = gpu_segments(r, 32);
  // s's memset goes before the kernel, which never touches s; the row sums join it (on the
  // first row of blocks).
  ASSERT_EQ(kinds(segments), "ZM");
  EXPECT_EQ(segments[0].zeroed, sum.s);
  EXPECT_EQ(segments[1].geometry.block, (std::array<std::int64_t, 3>{32, 1, 1}));
  EXPECT_EQ(segments[1].geometry.grid, (std::array<std::int64_t, 3>{4, 45, 1}));
  EXPECT_TRUE(has(ir::print_stmt(segments[1].body), "100:i64)")) << ir::print_stmt(segments[1].body);
}

// out[i, j] = in[i, j] * v (a local) over fresh loops.
ir::StmtRef scale_by_local(const ir::NodeRef& out, const ir::NodeRef& in, int v) {
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto value = ir::apply(ir::Op::Mul, DType::F32, {ir::get(in, {it(i), it(j)}), ir::get_local(v, DType::F32)});
  return ir::for_loop(i, 0, out->dims[0], ir::for_loop(j, 0, out->dims[1], ir::set(out, {it(i), it(j)}, value)));
}

TEST(Fission, HoistedLocalsAreReplicatedIntoTheKernelsUsingThem) {
  const auto w = matrix("w", 8, 300), x = matrix("x", 8, 300), y = matrix("y", 8, 300), z = matrix("z", 8, 300);
  const auto s = matrix("s", 1, 1);
  const int v = ir::fresh_scope_id();
  // v = x[0, 0] + x[7, 299], hoisted above its users; it reads x, which the first kernel writes.
  const auto sum = ir::apply(ir::Op::Add, DType::F32,
                             {ir::get(x, {AxisIndex::fixed(0), AxisIndex::fixed(0)}), ir::get(x, {AxisIndex::fixed(7), AxisIndex::fixed(299)})});
  const auto use = ir::set(s, {AxisIndex::fixed(0), AxisIndex::fixed(0)}, ir::get_local(v, DType::F32));
  const ir::LoweredRoutine r{"hoisted",
                             ir::seq({Map2{x, w}.nest(), ir::declare_local(v, DType::F32, false), ir::set_local(v, sum),
                                      scale_by_local(y, x, v), scale_by_local(z, y, v), Map2{w, z}.nest(), use}),
                             {}};
  const auto segments = gpu_segments(r);
  ASSERT_EQ(kinds(segments), "KMS");
  for (std::size_t k : {1, 2}) {
    const std::string text = ir::print_stmt(segments[k].body);
    EXPECT_EQ(text.find("declare"), 0u) << text;
  }
}

// v = w[0, 0], hoisted above its two users; the nest after them writes w (legal for the hoist:
// no statement from the first user to the last writes what v reads). Each thread of the merged
// kernel computes its copy of v at its start, so that nest may not join the users' kernel:
// block 0 would overwrite w[0, 0] before block 1 (or thread 1) computed v from it.
TEST(Fission, ANestWritingWhatAReplicatedDefinitionReadsClosesItsKernel) {
  const auto w = matrix("w", 8, 300), x = matrix("x", 8, 300), y = matrix("y", 8, 300), z = matrix("z", 8, 300);
  const int v = ir::fresh_scope_id();
  const auto first = ir::get(w, {AxisIndex::fixed(0), AxisIndex::fixed(0)});
  const ir::LoweredRoutine r{"overwritten",
                             ir::seq({ir::declare_local(v, DType::F32, false), ir::set_local(v, first),
                                      scale_by_local(y, x, v), scale_by_local(z, x, v), Map2{w, x}.nest()}),
                             {}};
  const auto segments = gpu_segments(r);
  ASSERT_EQ(kinds(segments), "MK");
}

// ---- errors ----

TEST(Fission, BlockOverTheHardwareLimitIsAScheduleError) {
  const auto x = ir::make_node("x", DType::F32, {2048});
  const ir::Symbol i = ir::fresh_symbol();
  const ir::LoweredRoutine r{"wide", ir::for_loop(i, 0, 2048, ir::set(x, {it(i)}, ir::constant(1, DType::F32)), AxisType::Workgroup), {}};
  expect_schedule_error([&] { fission(r, gpu_test_target()); },
                        {"check_hardware_limits", "loop i0", "threads per block 2048", "max_threads_per_block of 1024",
                         "gpu_schedule_block_size"});
}

TEST(Fission, GridSlotOverTheHardwareLimitIsAScheduleError) {
  const auto x = matrix("x", 70000, 2);
  const ir::Symbol a = ir::fresh_symbol(), b = ir::fresh_symbol();
  const auto store = ir::set(x, {it(a), it(b)}, ir::constant(1, DType::F32));
  const ir::LoweredRoutine r{"tall", ir::for_loop(a, 0, 70000, ir::for_loop(b, 0, 2, store, AxisType::Grid), AxisType::Grid), {}};
  expect_schedule_error([&] { fission(r, gpu_test_target()); }, {"grid dimension y 70000", "max_grid_dims of 65535"});
}

TEST(Fission, SharedMemoryOverTheHardwareLimitIsAScheduleError) {
  const auto x = ir::make_node("x", DType::F32, {256});
  const ir::Symbol i = ir::fresh_symbol();
  Segment s;
  s.body = ir::for_loop(i, 0, 256, ir::set(x, {it(i)}, ir::constant(1, DType::F32)), AxisType::Workgroup);
  s.geometry = ir::kernel_geometry(s.body);
  s.geometry.shared_bytes = 65536;
  expect_schedule_error([&] { check_hardware_limits(s, gpu_test_target()); },
                        {"workgroup-shared memory (bytes) 65536", "max_shared_bytes of 49152"});
  s.geometry.shared_bytes = 49152;
  check_hardware_limits(s, gpu_test_target());
}

// A blocked matmul tile is a launch of its own (never merged with the nests around it), and its
// staged slices count against the device's shared memory: a blocking over it is a ScheduleError.
TEST(Fission, ABlockedTileIsItsOwnKernelAndItsStagingIsChecked) {
  const Matmul mm(70, 33, 2);
  const auto out = matrix("out", 70, 33), in = matrix("in", 70, 2);
  const ir::LoweredRoutine r{"tile_between", ir::seq({Map2{mm.a, in}.nest(), mm.nest(), Map2{out, mm.c}.nest()}), {}};
  ir::Target t = gpu_test_target();
  const ir::LoweredRoutine low = lower_for_target(default_gpu_schedule(r, {.target = t}), t);
  const std::vector<Segment> segments = fission(low, t);
  EXPECT_EQ(kinds(segments), "KKK");
  EXPECT_TRUE(std::holds_alternative<ir::TileMma>(segments[1].body->node)) << ir::print_stmt(segments[1].body);
  const NodeBytes expected = run_interp(r);
  for (const Order order : {Order::Interpreter, Order::BlocksForward, Order::BlocksReversed})
    EXPECT_EQ(compare(expected, run_segments(r, segments, order), Tolerance::Bitwise), "") << ir::print_loop_ir(low);
  // 64 x 64 blocks in 256-step slices: (65 + 65) * 256 * 4 bytes staged, over CUDA's 48 KiB.
  t.gpu_tile.bk = 256;
  const ir::LoweredRoutine deep = lower_for_target(default_gpu_schedule(Matmul(128, 128, 512).routine(), {.target = t}), t);
  expect_schedule_error([&] { fission(deep, t); },
                        {"check_hardware_limits", "workgroup-shared memory (bytes) 133120", "max_shared_bytes of 49152",
                         "smaller staged tiles"});
}

TEST(Fission, RacyWorkgroupRetypeIsAScheduleError) {
  RowSum sum(8, 300);
  expect_schedule_error([&] { apply(sum.routine(), Retype{sum.r, AxisType::Workgroup}); },
                        {"retype i1 to workgroup", "a race", "s[i0]"});
  // Split into blocks of threads: the remainder guard must not hide the race.
  expect_schedule_error([&] { apply(sum.routine(), split(sum.r, 256, AxisType::Grid, AxisType::Workgroup)); },
                        {"split i1 by 256", "a race", "s[i0]"});
}

// for i Workgroup: y[i] = x[i] * 2, then for r WorkgroupReduce: z[r] = relu(y[r]): a loop not
// in the block-reduction form runs on the first thread, which reads what the other threads of
// the first loop wrote. Merged, the two need a barrier (found by the race checker's model of
// reductions in the hand-made annotations' fuzzer; "Free" before, a race on a GPU).
TEST(Fission, AWorkgroupReduceLoopIsNeverAlignedWithOtherThreads) {
  const auto x = ir::make_node("x", DType::F32, {5}), y = ir::make_node("y", DType::F32, {5});
  const auto z = ir::make_node("z", DType::F32, {5});
  const ir::Symbol i = ir::fresh_symbol(), r = ir::fresh_symbol();
  const auto twice = ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, {it(i)}), ir::constant(2, DType::F32)});
  const auto relu = ir::apply(ir::Op::Relu, DType::F32, {ir::get(y, {it(r)})});
  const ir::LoweredRoutine routine{
      "serial_reduce",
      ir::seq({ir::for_loop(i, 0, 5, ir::set(y, {it(i)}, twice), AxisType::Workgroup),
               ir::for_loop(r, 0, 5, ir::set(z, {it(r)}, relu), AxisType::WorkgroupReduce)}),
      {}};
  const ir::Target t = gpu_test_target();
  const auto segments = fission(lower_for_target(routine, t), t);
  ASSERT_EQ(kinds(segments), "M");
  EXPECT_EQ(merge_counts(segments).with_barrier, 1) << ir::print_stmt(segments[0].body);
  EXPECT_EQ(compare(run_interp(routine), run_segments(routine, segments), Tolerance::Bitwise), "");
}

// A Partition inside a WorkgroupReduce loop splits its accumulation into two statements, which
// the loop's licence (one accumulation re-associated) does not cover: refused when applied, not
// an internal error in the final lowering round.
TEST(Fission, ATransformLeavingAnAnnotatedLoopUnsoundIsAScheduleError) {
  // for r WorkgroupReduce: for k: m[0] = max(m[0], x[r, k]), then k partitioned at 2.
  const auto x = ir::make_node("x", DType::F32, {4, 6}), m = ir::make_node("m", DType::F32, {1});
  const ir::Symbol r = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto max = ir::apply(ir::Op::Max, DType::F32, {ir::get(m, {AxisIndex::fixed(0)}), ir::get(x, {it(r), it(k)})});
  const ir::LoweredRoutine routine{
      "row_max", ir::for_loop(r, 0, 4, ir::for_loop(k, 0, 6, ir::set(m, {AxisIndex::fixed(0)}, max))), {}};
  const ir::LoweredRoutine reduced = apply(routine, Retype{r, AxisType::WorkgroupReduce});
  expect_schedule_error([&] { apply(reduced, Partition{k, {2}}); },
                        {"partition", "no longer sound", "reach the same cell in different iterations"});
}

// for i serial: { for j Workgroup: y[i, j] = x[i, j]; barrier } (the final round's order of a
// serial loop whose threads hand cells on), then a nest of two thread slots: merged, the first
// statement would run under a one-iteration loop of the second slot, its barrier skipped by the
// other threads (found by cuda-cpu, which names the thread that returned). Two kernels instead.
TEST(Fission, AStatementsBarrierIsNeverPutWhereSomeThreadsSkipIt) {
  const auto x = matrix("x", 2, 3), y = matrix("y", 2, 3), z = matrix("z", 2, 3);
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), a = ir::fresh_symbol(), b = ir::fresh_symbol();
  const AxisIndex mirrored{{{-1, j}}, 2};
  const auto copy = ir::for_loop(j, 0, 3, ir::set(y, {it(i), it(j)}, ir::get(x, {it(i), mirrored})), AxisType::Workgroup);
  const auto rows = ir::for_loop(i, 0, 2, ir::seq({copy, ir::barrier()}));
  const auto twice = ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, {it(a), it(b)}), ir::constant(2, DType::F32)});
  const auto nest = ir::for_loop(a, 0, 2, ir::for_loop(b, 0, 3, ir::set(z, {it(a), it(b)}, twice), AxisType::Workgroup),
                                 AxisType::Workgroup);
  const ir::LoweredRoutine routine{"padded_barrier", ir::seq({rows, nest}), {}};
  const auto segments = fission(routine, gpu_test_target());
  EXPECT_EQ(kinds(segments), "KK");
  EXPECT_EQ(compare(run_interp(routine), run_segments(routine, segments), Tolerance::Bitwise), "");
}

// Privatize's form around `loops` (after the statements `before`): v := t[0]; loops; t[0] = v.
ir::LoweredRoutine privatized(const std::string& name, int v, const ir::NodeRef& t, std::vector<ir::StmtRef> before,
                              const std::vector<ir::StmtRef>& loops) {
  const AxisIndex zero = AxisIndex::fixed(0);
  before.push_back(ir::declare_local(v, DType::F32, false));
  before.push_back(ir::set_local(v, ir::get(t, {zero, zero})));
  before.insert(before.end(), loops.begin(), loops.end());
  before.push_back(ir::set(t, {zero, zero}, ir::get_local(v, DType::F32)));
  return {name, ir::seq(std::move(before)), {}};
}

// Privatize's form: v := t[0]; for i: { for j Workgroup: y[j] = x[i, j]; barrier; v := v + y[0];
// barrier }; t[0] = v. A thread's local lives only as long as its launch: the statement reading
// v after the loop must run in the loop's kernel (on its first thread), not in a serial kernel
// of its own that starts again from v := t[0] (found by the hand-made annotations' fuzzer).
TEST(Fission, AStatementReadingALocalALoopSetRunsInThatLoopsKernel) {
  const auto x = matrix("x", 3, 4), y = matrix("y", 1, 4), t = matrix("t", 1, 1);
  const int v = ir::fresh_scope_id();
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto zero = AxisIndex::fixed(0);
  const auto stage = ir::for_loop(j, 0, 4, ir::set(y, {zero, it(j)}, ir::get(x, {it(i), it(j)})), AxisType::Workgroup);
  const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), ir::get(y, {zero, zero})});
  const auto rows = ir::for_loop(i, 0, 3, ir::seq({stage, ir::barrier(), ir::set_local(v, add), ir::barrier()}));
  const ir::LoweredRoutine routine = privatized("privatized", v, t, {}, {rows});
  const auto segments = fission(routine, gpu_test_target());
  EXPECT_EQ(kinds(segments), "M");
  EXPECT_EQ(compare(run_interp(routine), run_segments(routine, segments), Tolerance::Bitwise), "");
}

// The privatized loop after an unrelated statement of two blocks: it opens a kernel of its own
// (one block), else the local's definition, replicated into every block, would read t while
// block 0 stores it.
TEST(Fission, APrivatizedLoopOpensAKernelOfOneBlock) {
  const auto x = matrix("x", 3, 4), y = matrix("y", 3, 4), t = matrix("t", 1, 1), w = matrix("w", 2, 4);
  const int v = ir::fresh_scope_id();
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), g = ir::fresh_symbol(), h = ir::fresh_symbol();
  const auto zero = AxisIndex::fixed(0);
  const auto copy = ir::set(w, {it(g), it(h)}, ir::get(x, {it(g), it(h)}));
  const auto other = ir::for_loop(g, 0, 2, ir::for_loop(h, 0, 4, copy, AxisType::Workgroup), AxisType::Grid);
  const auto stage = ir::for_loop(j, 0, 4, ir::set(y, {it(i), it(j)}, ir::get(x, {it(i), it(j)})), AxisType::Workgroup);
  const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), ir::get(x, {it(i), zero})});
  const auto rows = ir::for_loop(i, 0, 3, ir::seq({stage, ir::set_local(v, add)}));
  const ir::LoweredRoutine routine = privatized("privatized_after_two_blocks", v, t, {other}, {rows});
  const ir::Target target = gpu_test_target();
  const auto segments = fission(lower_for_target(routine, target), target);
  EXPECT_EQ(kinds(segments), "KM");
  for (const Order order : {Order::Interpreter, Order::BlocksForward, Order::BlocksReversed})
    EXPECT_EQ(compare(run_interp(routine), run_segments(routine, segments, order), Tolerance::Bitwise), "");
}

// Privatize, then Partition of the loop: two serial loops set v before the serial reader. All
// serial, they share one kernel of one thread (the second loop must not close the first's).
TEST(Fission, APartitionedPrivatizedLoopStaysInOneSerialKernel) {
  const auto x = matrix("x", 1, 4), t = matrix("t", 1, 1);
  const int v = ir::fresh_scope_id();
  const auto zero = AxisIndex::fixed(0);
  auto segment = [&](std::int64_t begin, std::int64_t end) {
    const ir::Symbol i = ir::fresh_symbol();
    const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), ir::get(x, {zero, it(i)})});
    return ir::for_loop(i, begin, end, ir::set_local(v, add));
  };
  const ir::LoweredRoutine routine = privatized("partitioned_privatized", v, t, {}, {segment(0, 2), segment(2, 4)});
  const auto segments = fission(routine, gpu_test_target());
  EXPECT_EQ(kinds(segments), "S");
  EXPECT_EQ(compare(run_interp(routine), run_segments(routine, segments), Tolerance::Bitwise), "");
}

// Privatize, then Partition: a parallel head (a staged operand) and a serial tail that sets v
// again, then the reader. The tail writes no node, but it is no definition to replicate at the
// kernel's start: it must run after the head (the fuzzer's seed 2030474 ran it first).
TEST(Fission, ALaterSetterOfALocalIsNoDefinitionToReplicate) {
  const auto x = matrix("x", 1, 4), tile = matrix("tile", 1, 1), t = matrix("t", 1, 1);
  const int v = ir::fresh_scope_id();
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto zero = AxisIndex::fixed(0);
  const auto stage = ir::for_loop(j, 0, 1, ir::set(tile, {zero, it(j)}, ir::get(x, {zero, it(i)})), AxisType::Workgroup);
  const auto head = ir::for_loop(i, 0, 3, ir::seq({stage, ir::set_local(v, ir::get(tile, {zero, zero}))}));
  const auto tail = ir::for_loop(k, 3, 4, ir::set_local(v, ir::get(x, {zero, it(k)})));
  const ir::LoweredRoutine routine = privatized("partitioned_overwrite", v, t, {}, {head, tail});
  const ir::Target target = gpu_test_target();
  const auto segments = fission(lower_for_target(routine, target), target);
  EXPECT_EQ(compare(run_interp(routine), run_segments(routine, segments), Tolerance::Bitwise), "");
}

// A serial statement sets v; a parallel one reads it on every thread. Run on the first thread
// only, the setter leaves the others without v: a ScheduleError, not wrong numbers.
TEST(Fission, AParallelReaderOfALocalASerialStatementSetIsAScheduleError) {
  const auto x = matrix("x", 1, 4), y = matrix("y", 1, 4), z = matrix("z", 1, 4), t = matrix("t", 1, 1);
  const int v = ir::fresh_scope_id();
  const ir::Symbol k = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto zero = AxisIndex::fixed(0);
  const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), ir::get(x, {zero, it(k)})});
  const auto setter =
      ir::for_loop(k, 0, 4, ir::seq({ir::set_local(v, add), ir::set(z, {zero, it(k)}, ir::get_local(v, DType::F32))}));
  const auto mul = ir::apply(ir::Op::Mul, DType::F32, {ir::get_local(v, DType::F32), ir::get(x, {zero, it(j)})});
  const auto reader = ir::for_loop(j, 0, 4, ir::set(y, {zero, it(j)}, mul), AxisType::Workgroup);
  const ir::LoweredRoutine routine{
      "serial_setter",
      ir::seq({ir::declare_local(v, DType::F32, false), ir::set_local(v, ir::get(t, {zero, zero})), setter, reader}),
      {}};
  const ir::Target target = gpu_test_target();
  expect_schedule_error([&] { fission(lower_for_target(routine, target), target); },
                        {"a scalar local set in one statement is used by a later one", "used in:"});
}

// Privatize, then Partition, of a loop staging its operand on the block's threads: both parts
// set v on every thread (outside the thread loops), so they, a reader of v on every thread and
// the store share one kernel of one block (30 annotations per program, seed 10, were refused).
TEST(Fission, PartsOfAPrivatizedLoopOnEveryThreadShareAKernelWithTheirReaders) {
  const auto x = matrix("x", 4, 3), tile = matrix("tile", 1, 3), z = matrix("z", 1, 3), t = matrix("t", 1, 1);
  const int v = ir::fresh_scope_id();
  const auto zero = AxisIndex::fixed(0);
  auto part = [&](std::int64_t begin, std::int64_t end) {
    const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
    const auto stage = ir::for_loop(j, 0, 3, ir::set(tile, {zero, it(j)}, ir::get(x, {it(i), it(j)})), AxisType::Workgroup);
    const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), ir::get(tile, {zero, AxisIndex::fixed(2)})});
    return ir::for_loop(i, begin, end, ir::seq({stage, ir::barrier(), ir::set_local(v, add), ir::barrier()}));
  };
  const ir::Symbol k = ir::fresh_symbol();
  const auto scaled = ir::apply(ir::Op::Mul, DType::F32, {ir::get_local(v, DType::F32), ir::get(x, {zero, it(k)})});
  const auto reader = ir::for_loop(k, 0, 3, ir::set(z, {zero, it(k)}, scaled), AxisType::Workgroup);
  const ir::LoweredRoutine routine = privatized("partitioned_on_every_thread", v, t, {}, {part(0, 2), part(2, 4), reader});
  const auto segments = fission(routine, gpu_test_target());
  EXPECT_EQ(kinds(segments), "M");
  for (const Order order : {Order::Interpreter, Order::BlocksForward, Order::BlocksReversed})
    EXPECT_EQ(compare(run_interp(routine), run_segments(routine, segments, order), Tolerance::Bitwise), "");
}

// A later part of the loop padded onto the first thread (no thread loop of its own) updates v
// there only: the reader on every thread would read the other threads' stale copies (the race
// checker reports that read), so fission refuses.
TEST(Fission, APartOfAPrivatizedLoopOnTheFirstThreadWithReadersOnEveryThreadIsAScheduleError) {
  const auto x = matrix("x", 4, 3), tile = matrix("tile", 1, 3), z = matrix("z", 1, 3), t = matrix("t", 1, 1);
  const int v = ir::fresh_scope_id();
  const auto zero = AxisIndex::fixed(0);
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol(), m = ir::fresh_symbol();
  const auto stage = ir::for_loop(j, 0, 3, ir::set(tile, {zero, it(j)}, ir::get(x, {it(i), it(j)})), AxisType::Workgroup);
  const auto add_tile = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), ir::get(tile, {zero, zero})});
  const auto head = ir::for_loop(i, 0, 2, ir::seq({stage, ir::barrier(), ir::set_local(v, add_tile), ir::barrier()}));
  const auto add_x = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), ir::get(x, {it(m), zero})});
  const auto tail = ir::for_loop(m, 2, 4, ir::set_local(v, add_x));
  const auto scaled = ir::apply(ir::Op::Mul, DType::F32, {ir::get_local(v, DType::F32), ir::get(x, {zero, it(k)})});
  const auto reader = ir::for_loop(k, 0, 3, ir::set(z, {zero, it(k)}, scaled), AxisType::Workgroup);
  const ir::LoweredRoutine routine = privatized("first_thread_part", v, t, {}, {head, tail, reader});
  expect_schedule_error([&] { fission(routine, gpu_test_target()); },
                        {"some threads would read it without running every statement setting it", "z["});
}

// The same loop, then a statement of two blocks using neither v nor t: it runs in a kernel of
// its own. In the local's kernel its second block would replicate v := t[0] while the first
// block's store writes t (a race).
TEST(Fission, AKernelCarryingALocalStaysOneBlock) {
  const auto x = matrix("x", 2, 4), y = matrix("y", 1, 4), w = matrix("w", 2, 4), t = matrix("t", 1, 1);
  const int v = ir::fresh_scope_id();
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), g = ir::fresh_symbol(), h = ir::fresh_symbol();
  const auto zero = AxisIndex::fixed(0);
  const auto stage = ir::for_loop(j, 0, 4, ir::set(y, {zero, it(j)}, ir::get(x, {it(i), it(j)})), AxisType::Workgroup);
  const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), ir::get(y, {zero, AxisIndex::fixed(3)})});
  const auto rows = ir::for_loop(i, 0, 2, ir::seq({stage, ir::barrier(), ir::set_local(v, add), ir::barrier()}));
  const auto copy = ir::set(w, {it(g), it(h)}, ir::get(x, {it(g), it(h)}));
  const auto other = ir::for_loop(g, 0, 2, ir::for_loop(h, 0, 4, copy, AxisType::Workgroup), AxisType::Grid);
  std::vector<ir::StmtRef> stmts = ir::flatten_seq(privatized("carrying", v, t, {}, {rows}).body);
  stmts.push_back(other);
  const ir::LoweredRoutine routine{"carrying_then_two_blocks", ir::seq(stmts), {}};
  const auto segments = fission(routine, gpu_test_target());
  EXPECT_EQ(kinds(segments), "MK");
  for (const Order order : {Order::Interpreter, Order::BlocksForward, Order::BlocksReversed})
    EXPECT_EQ(compare(run_interp(routine), run_segments(routine, segments, order), Tolerance::Bitwise), "");
}

TEST(Fission, WriteRepeatedByEveryThreadIsAnInternalError) {
  // Under an If the whole statement is one kernel: s[0] is outside the thread loop.
  const auto x = ir::make_node("x", DType::F32, {32});
  const auto s = ir::make_node("s", DType::F32, {1});
  const ir::Symbol i = ir::fresh_symbol();
  const auto threads = ir::for_loop(i, 0, 32, ir::set(x, {it(i)}, ir::constant(1, DType::F32)), AxisType::Workgroup);
  const auto body = ir::seq({threads, ir::set(s, {AxisIndex::fixed(0)}, ir::constant(2, DType::F32))});
  const ir::LoweredRoutine r{"repeated", ir::if_then(ir::constant(1, DType::I64), body), {}};
  interp::testing::expect_internal_error([&] { fission(r, gpu_test_target()); },
                                         {"active hardware slot", "s[0]"});
}

}  // namespace
}  // namespace cannl::schedule::testing
