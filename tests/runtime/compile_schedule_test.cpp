// Context::compile with a schedule brought by the caller (CompileOptions): transforms or a trace
// replace the backend's default schedule, run bitwise like the default compile and the
// interpreter, show in Routine::lowered(), and an illegal schedule is a ScheduleError that leaves
// the context as it was.
#include <gtest/gtest.h>

#include <cstring>

#include <cstddef>
#include <string>
#include <vector>

#include "cannl/ir/tree_mapper.h"
#include "cannl/runtime/context.h"
#include "cannl/schedule/default_cpu.h"
#include "cannl/schedule/trace.h"
#include "cannl/support/error.h"
#include "runtime/packing_check.h"
#include "runtime/test_util.h"

namespace cannl::testing {
namespace {

using ir::AxisType;
using ir::DType;
using ir::Op;
using runtime::CompileOptions;
using runtime::Context;
using runtime::ScheduleChoice;

constexpr std::int64_t kRows = 64, kSteps = 32, kCols = 48;

/// c[m, n] = sum_k a[m, k] * b[k, n] (neutral-initialized), built afresh on each call: fresh
/// nodes and symbols, the same structure. With `one_label` every node is labelled "m".
struct Matmul {
  explicit Matmul(bool one_label = false)
      : a(ir::make_node(one_label ? "m" : "a", DType::F32, {kRows, kSteps})),
        b(ir::make_node(one_label ? "m" : "b", DType::F32, {kSteps, kCols})),
        c(ir::make_node(one_label ? "m" : "c", DType::F32, {kRows, kCols})),
        comp(single_accum(accum_op(c, Op::Add, Op::Mul, {of(a), of(b)}, matmul_projections(kRows, kSteps, kCols),
                                   /*init=*/true))) {}
  ir::NodeRef a, b, c;
  ir::Comp comp;
};

/// Small multiples of 1/8: every partial sum is exact in f32, so a wrong schedule (a lost or
/// doubled update, a misplaced cell) shows as different bytes while any legal order agrees.
std::vector<double> values(std::int64_t n, int mod) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<double>(static_cast<int>(k % mod) - mod / 2) / 8.0;
  return v;
}

/// Compiles the matmul in `ctx` (with `options`), runs it and returns c's bytes.
std::vector<std::byte> run_matmul(Context ctx, const Matmul& mm, const CompileOptions& options = {},
                                  runtime::Routine* compiled = nullptr) {
  auto routine = ctx.compile(mm.comp, "mm", options);
  ctx.set_values(mm.a, values(kRows * kSteps, 7));
  ctx.set_values(mm.b, values(kSteps * kCols, 5));
  ctx.run(routine);
  if (compiled) *compiled = routine;
  return ctx.get_bytes(mm.c);
}

/// Every loop of the routine, outermost first (TileMma fallbacks included).
std::vector<const ir::For*> loops_of(const ir::LoweredRoutine& r) {
  std::vector<const ir::For*> loops;
  ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
    if (const auto* f = std::get_if<ir::For>(&s.node)) loops.push_back(f);
  });
  return loops;
}

/// The first loop over [0, extent).
ir::Symbol loop_with_extent(const ir::LoweredRoutine& r, std::int64_t extent) {
  for (const ir::For* f : loops_of(r))
    if (f->begin == 0 && f->end == extent) return f->index;
  ADD_FAILURE() << "no loop over [0, " << extent << ") in\n" << ir::print_loop_ir(r);
  return {};
}

bool has_loop(const ir::LoweredRoutine& r, std::int64_t extent, AxisType type) {
  for (const ir::For* f : loops_of(r))
    if (f->begin == 0 && f->end == extent && f->axis == type) return true;
  return false;
}

bool has_tile(const ir::LoweredRoutine& r) {
  bool found = false;
  ir::for_each_stmt(r.body, [&](const ir::Stmt& s) { found = found || std::holds_alternative<ir::TileMma>(s.node); });
  return found;
}

/// The rows split by 16, the chunk loop a Grid.
std::vector<schedule::Transform> split_rows_for_the_grid(const ir::LoweredRoutine& r) {
  return {schedule::split(loop_with_extent(r, kRows), 16, AxisType::Grid)};
}

/// The nest as one tile: rows, columns, steps.
std::vector<schedule::Transform> tensorize(const ir::LoweredRoutine& r) {
  return {schedule::Tensorize{loop_with_extent(r, kRows), loop_with_extent(r, kCols), loop_with_extent(r, kSteps)}};
}

/// Expects `statement` to throw ScheduleError whose message contains every one of `parts`.
template <typename F>
void expect_schedule_error(F&& statement, const std::vector<std::string>& parts) {
  try {
    statement();
    ADD_FAILURE() << "expected a ScheduleError";
  } catch (const ScheduleError& e) {
    for (const auto& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "message lacks '" << part << "': " << e.what();
  }
}

/// After a refused compile the context holds nothing of it: no buffers, no routine id used, and a
/// normal compile and run still work.
void expect_unchanged_and_usable(Context ctx, const Matmul& mm, const std::vector<std::byte>& expected) {
  EXPECT_FALSE(ctx.has_buffer(mm.a));
  EXPECT_FALSE(ctx.has_buffer(mm.c));
  runtime::Routine routine;
  EXPECT_EQ(run_matmul(ctx, mm, {}, &routine), expected);
  EXPECT_EQ(routine.id(), 0) << "the refused compile took no routine id";
}

TEST(CompileScheduleTest, SplitGridOnTheCBackendRunsBitwiseLikeTheDefaultAndTheInterpreter) {
  const auto reference = run_matmul(Context::interpreter(), Matmul{});
  EXPECT_EQ(run_matmul(Context::cpu(), Matmul{}), reference) << "the default schedule";

  auto backend = backends::make_cc_backend();
  runtime::Routine routine;
  const auto chosen = run_matmul(Context(backend), Matmul{},
                                 {.schedule = ScheduleChoice::build(split_rows_for_the_grid)}, &routine);
  EXPECT_EQ(chosen, reference) << "the chosen schedule";
  // The final round keeps the Grid only with a parallel runtime; the split shows either way.
  const AxisType chunk_type = backend->target().parallel_runtime ? AxisType::Grid : AxisType::Serial;
  EXPECT_TRUE(has_loop(routine.lowered(), kRows / 16, chunk_type)) << ir::print_loop_ir(routine.lowered());
  EXPECT_TRUE(has_loop(routine.lowered(), 16, AxisType::Serial)) << ir::print_loop_ir(routine.lowered());
}

TEST(CompileScheduleTest, TensorizeOnTheCBackendRunsBitwiseLikeTheInterpreter) {
  const auto reference = run_matmul(Context::interpreter(), Matmul{});
  auto backend = backends::make_cc_backend();
  runtime::Routine routine;
  EXPECT_EQ(run_matmul(Context(backend), Matmul{}, {.schedule = ScheduleChoice::build(tensorize)}, &routine),
            reference);
  // A target without SIMD runs the tile's fallback nest (the final round); with SIMD, the tile.
  EXPECT_EQ(has_tile(routine.lowered()), backend->target().vector_bytes > 0) << ir::print_loop_ir(routine.lowered());
}

TEST(CompileScheduleTest, AnEmptyScheduleIsTheSerialRoutine) {
  const auto reference = run_matmul(Context::interpreter(), Matmul{});
  runtime::Routine routine;
  const auto serial = run_matmul(Context::cpu(), Matmul{},
                                 {.schedule = ScheduleChoice::build([](const ir::LoweredRoutine&) {
                                    return std::vector<schedule::Transform>{};
                                  })},
                                 &routine);
  EXPECT_EQ(serial, reference);
  EXPECT_FALSE(has_tile(routine.lowered()));
  for (const ir::For* f : loops_of(routine.lowered())) EXPECT_EQ(f->axis, AxisType::Serial);
}

TEST(CompileScheduleTest, TheInterpreterBackendRunsTheChosenScheduleAsWritten) {
  const auto reference = run_matmul(Context::interpreter(), Matmul{});
  runtime::Routine routine;
  auto split_then_tile = [](const ir::LoweredRoutine& r) {
    auto t = tensorize(r);
    auto s = split_rows_for_the_grid(r);
    t.insert(t.begin(), s.begin(), s.end());
    const auto& split = std::get<schedule::Split>(t.front());
    std::get<schedule::Tensorize>(t.back()).i = split.inner;  // the tile takes the chunk's rows
    return t;
  };
  EXPECT_EQ(run_matmul(Context::interpreter(), Matmul{}, {.schedule = ScheduleChoice::build(split_then_tile)},
                       &routine),
            reference);
  EXPECT_TRUE(has_loop(routine.lowered(), kRows / 16, AxisType::Grid)) << ir::print_loop_ir(routine.lowered());
  EXPECT_TRUE(has_tile(routine.lowered())) << ir::print_loop_ir(routine.lowered());
}

TEST(CompileScheduleTest, ATraceOfTheDefaultCpuScheduleReplaysOntoTheProgramBuiltAgain) {
  auto backend = backends::make_cc_backend();
  // Recorded against one build of the program, through text, as another process would read it.
  std::string text;
  {
    Context ctx(backend);
    const Matmul first;
    const ir::LoweredRoutine r = ctx.optimized_routine(first.comp, "mm");
    auto options = schedule::CpuScheduleOptions::from_config();
    options.target = backend->target();
    const schedule::ScheduleTrace trace = schedule::record(r, schedule::default_cpu_schedule(r, options).transforms);
    ASSERT_FALSE(trace.steps.empty()) << "the default schedule does something to a matmul";
    text = schedule::print_trace(trace);
  }
  runtime::Routine by_default, replayed;
  const auto expected = run_matmul(Context(backend), Matmul{}, {}, &by_default);
  EXPECT_EQ(run_matmul(Context(backend), Matmul{}, {.schedule = ScheduleChoice::replay(schedule::parse_trace(text))},
                       &replayed),
            expected);
  EXPECT_EQ(ir::print_loop_ir(replayed.lowered()), ir::print_loop_ir(by_default.lowered()))
      << "the trace is the default schedule";
}

TEST(CompileScheduleTest, TransformsMadeForTheOptimizedRoutineApplyToTheCompile) {
  const auto reference = run_matmul(Context::interpreter(), Matmul{});
  auto ctx = Context::interpreter();
  const Matmul mm;
  const ir::LoweredRoutine r = ctx.optimized_routine(mm.comp, "mm");
  EXPECT_FALSE(ctx.has_buffer(mm.a)) << "optimized_routine allocates nothing";
  runtime::Routine routine;
  EXPECT_EQ(run_matmul(ctx, mm, {.schedule = ScheduleChoice::transforms(r, split_rows_for_the_grid(r))}, &routine),
            reference);
  EXPECT_TRUE(has_loop(routine.lowered(), kRows / 16, AxisType::Grid)) << ir::print_loop_ir(routine.lowered());
}

TEST(CompileScheduleTest, TransformsForTheOptimizedRoutineApplyWhenNodesShareALabel) {
  // Nodes sharing a label print with their position ("m#1"), not their ids.
  const auto reference = run_matmul(Context::interpreter(), Matmul{});
  auto ctx = Context::cpu();
  const Matmul mm(/*one_label=*/true);
  const ir::LoweredRoutine r = ctx.optimized_routine(mm.comp, "mm");
  ASSERT_NE(ir::print_loop_ir(r).find("m#"), std::string::npos) << ir::print_loop_ir(r);
  EXPECT_EQ(run_matmul(ctx, mm, {.schedule = ScheduleChoice::transforms(r, tensorize(r))}), reference);
}

TEST(CompileScheduleTest, ATraceReplaysOntoTheProgramBuiltAgainWhenNodesShareALabel) {
  const auto reference = run_matmul(Context::interpreter(), Matmul{});
  auto ctx = Context::cpu();
  const ir::LoweredRoutine r = ctx.optimized_routine(Matmul(/*one_label=*/true).comp, "mm");
  const schedule::ScheduleTrace trace = schedule::record(r, tensorize(r));
  // Built again: other node ids, the same digest.
  EXPECT_EQ(run_matmul(Context::cpu(), Matmul(/*one_label=*/true), {.schedule = ScheduleChoice::replay(trace)}),
            reference);
}

TEST(CompileScheduleTest, AVariantOfTheTargetDecidesTheCompile) {
  auto backend = backends::make_cc_backend();
  ir::Target serial_tiles = backend->target();
  serial_tiles.threads = 1;
  serial_tiles.gemm.kc = 64;  // another blocking of the kernel library: the same bits
  runtime::Routine by_default, varied;
  const auto expected = run_matmul(Context(backend), Matmul{}, {}, &by_default);
  EXPECT_EQ(run_matmul(Context(backend), Matmul{}, {.target = serial_tiles}, &varied), expected);
  ASSERT_TRUE(has_tile(varied.lowered())) << ir::print_loop_ir(varied.lowered());
  bool team_of_one = false;
  ir::for_each_stmt(varied.lowered().body, [&](const ir::Stmt& s) {
    if (const auto* t = std::get_if<ir::TileMma>(&s.node)) team_of_one = t->team == 1;
  });
  EXPECT_TRUE(team_of_one || !serial_tiles.parallel_runtime) << ir::print_loop_ir(varied.lowered());
}

TEST(CompileScheduleTest, ARacyGridRetypeIsAScheduleErrorAndTheContextStaysUsable) {
  const auto reference = run_matmul(Context::interpreter(), Matmul{});
  auto ctx = Context::cpu();
  const Matmul mm;
  auto steps_as_grid = [](const ir::LoweredRoutine& r) {
    return std::vector<schedule::Transform>{schedule::Retype{loop_with_extent(r, kSteps), AxisType::Grid}};
  };
  expect_schedule_error([&] { ctx.compile(mm.comp, "mm", {.schedule = ScheduleChoice::build(steps_as_grid)}); },
                        {"routine 'mm'", "race"});
  expect_unchanged_and_usable(ctx, mm, reference);
}

TEST(CompileScheduleTest, ATraceNamingAnUnknownLoopIsAScheduleError) {
  const auto reference = run_matmul(Context::interpreter(), Matmul{});
  auto ctx = Context::cpu();
  const Matmul mm;
  const std::string digest = schedule::program_digest(ctx.optimized_routine(mm.comp, "mm"));
  const auto trace = schedule::parse_trace("cannl-schedule 1\ndigest " + digest + "\nretype i9 grid\n");
  expect_schedule_error([&] { ctx.compile(mm.comp, "mm", {.schedule = ScheduleChoice::replay(trace)}); },
                        {"routine 'mm'", "no loop i9"});
  expect_unchanged_and_usable(ctx, mm, reference);
}

TEST(CompileScheduleTest, ATraceOfAnotherProgramIsRefusedByTheDigest) {
  const auto reference = run_matmul(Context::interpreter(), Matmul{});
  auto ctx = Context::cpu();
  // A pointwise program's trace offered to the matmul.
  auto x = ir::make_node("x", DType::F32, {kRows});
  auto y = ir::make_node("y", DType::F32, {kRows});
  const ir::Comp other = single_accum(accum_op(y, Op::Arg2, Op::Neg, {of(x)}, pointwise_projections({kRows}, 1)));
  const auto trace = schedule::record(ctx.optimized_routine(other, "neg"), {});
  const Matmul mm;
  expect_schedule_error([&] { ctx.compile(mm.comp, "mm", {.schedule = ScheduleChoice::replay(trace)}); },
                        {"routine 'mm'", "digest", "made for another program"});
  expect_unchanged_and_usable(ctx, mm, reference);
}

TEST(CompileScheduleTest, ParallelAnnotationsAreValidatedAtCompile) {
  // Each Retype to Grid is legal on its own; four nested Grid loops break the structural rules
  // validate_parallel checks, which the C backend's final round would otherwise meet.
  auto ctx = Context::cpu();
  auto x = ir::make_node("x", DType::F32, {2, 3, 4, 5});
  auto y = ir::make_node("y", DType::F32, {2, 3, 4, 5});
  const ir::Comp comp = single_accum(accum_op(y, Op::Arg2, Op::Neg, {of(x)}, pointwise_projections({2, 3, 4, 5}, 1)));
  auto all_grid = [](const ir::LoweredRoutine& r) {
    std::vector<schedule::Transform> t;
    for (std::int64_t extent : {2, 3, 4, 5}) t.push_back(schedule::Retype{loop_with_extent(r, extent), AxisType::Grid});
    return t;
  };
  expect_schedule_error([&] { ctx.compile(comp, "neg", {.schedule = ScheduleChoice::build(all_grid)}); },
                        {"routine 'neg'", "validate_parallel", "more than 3 nested"});
  EXPECT_FALSE(ctx.has_buffer(x));
  auto routine = ctx.compile(comp, "neg");
  ctx.set_values(x, values(2 * 3 * 4 * 5, 9));
  ctx.run(routine);
  EXPECT_EQ(ctx.get_values(y)[1], 3.0 / 8.0);  // y = -x, x[1] = (1 - 4) / 8
}

TEST(CompileScheduleTest, AHoistedStagePacksOnceOnTheCBackend) {
  expect_packed_once_and_after_changes(Context::cpu());
}

TEST(CompileScheduleTest, AHoistedStagePacksOnceOnTheInterpreter) {
  expect_packed_once_and_after_changes(Context::interpreter());
}

// Cells written in place through host_storage are a change no write count sees: the packing of a
// source handed out that way runs before every run.
TEST(CompileScheduleTest, AWriteThroughHostStorageRefreshesAPackedOperand) {
  const PackedMatmul mm;
  auto ctx = Context::cpu();
  ctx.set_values(mm.a, PackedMatmul::a_values());
  ctx.set_values(mm.b, PackedMatmul::b_values(0));
  const auto routine = mm.compile(ctx);
  ctx.run(routine);
  ASSERT_EQ(ctx.get_bytes(mm.c), mm.reference(0));
  const std::span<std::byte> cells = ctx.host_storage(mm.b);
  ASSERT_FALSE(cells.empty());
  std::vector<float> b3;
  for (const double v : PackedMatmul::b_values(3)) b3.push_back(static_cast<float>(v));
  ASSERT_EQ(cells.size(), b3.size() * sizeof(float));
  std::memcpy(cells.data(), b3.data(), cells.size());
  ctx.run(routine);
  EXPECT_EQ(ctx.get_bytes(mm.c), mm.reference(3)) << "b was written in place: its packing must run again";
  // And again after a second write through the same span, with no call in between.
  ctx.run(routine);
  for (std::size_t k = 0; k < b3.size(); ++k) b3[k] = static_cast<float>(PackedMatmul::b_values(0)[k]);
  std::memcpy(cells.data(), b3.data(), cells.size());
  ctx.run(routine);
  EXPECT_EQ(ctx.get_bytes(mm.c), mm.reference(0));
}

}  // namespace
}  // namespace cannl::testing
