// Schedule traces: record -> print -> parse -> replay onto a structurally equal program (fresh
// symbols and node ids) gives the same scheduled program; the digest guards the replay.
#include <gtest/gtest.h>

#include "cannl/schedule/default_cpu.h"
#include "cannl/schedule/trace.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

TEST(ScheduleTrace, HandWrittenScheduleRoundTripsOntoAnEqualProgram) {
  Matmul first(12, 8, 6);
  const Split s = split(first.i, 4);
  const std::vector<Transform> steps = {ExpandZero{first.c->id}, s, Swap{first.j, first.k}, Swap{first.k, first.j},
                                        Stage{first.b->id, s.outer}, Tensorize{s.inner, first.j, first.k},
                                        Pad{s.outer, 4}, Partition{s.outer, {1}}};
  const ScheduleTrace trace = record(first.routine(), steps);
  const std::string text = print_trace(trace);
  EXPECT_EQ(text.substr(0, 24), "cannl-schedule 1\ndigest ");
  EXPECT_NE(text.find("\nexpand_zero n0\nsplit i2 4 serial serial\nswap i4 i5\nswap i4 i5\nstage n2 i2\n"
                      "tensorize i5 i6 i7\npad i2 4\npartition i2 1\n"), std::string::npos) << text;
  const ScheduleTrace parsed = parse_trace(text);
  EXPECT_EQ(parsed, trace);

  Matmul second(12, 8, 6);  // the same program with fresh symbols and nodes
  const auto replayed = replay(second.routine(), parsed);
  EXPECT_EQ(ir::print_loop_ir(replayed), ir::print_loop_ir(schedule::apply(first.routine(), steps)));
  EXPECT_EQ(compare(run_interp(second.routine()), run_interp(replayed), Tolerance::Bitwise), "");
}

TEST(ScheduleTrace, HoistedStageRoundTrips) {
  Matmul first(4, 6, 5);
  const Split s = split(first.j, 3);
  const std::vector<Transform> steps = {s, Stage{first.b->id, s.outer, true}};
  const std::string text = print_trace(record(first.routine(), steps));
  EXPECT_NE(text.find("\nstage n2 i1 hoisted\n"), std::string::npos) << text;
  Matmul second(4, 6, 5);
  const auto replayed = replay(second.routine(), parse_trace(text));
  EXPECT_EQ(ir::print_loop_ir(replayed), ir::print_loop_ir(schedule::apply(first.routine(), steps)));
  EXPECT_EQ(compare(run_interp(second.routine()), run_interp(replayed), Tolerance::Bitwise), "");
  std::string bad = text;
  bad.replace(bad.find(" hoisted"), 8, " hoist");
  EXPECT_THROW(replay(second.routine(), parse_trace(bad)), ScheduleError);
}

TEST(ScheduleTrace, DefaultScheduleRoundTrips) {
  Elementwise first(256, 64);
  const ScheduledRoutine s = default_cpu_schedule(first.routine(), CpuScheduleOptions{});
  ASSERT_FALSE(s.transforms.empty());
  const ScheduleTrace trace = parse_trace(print_trace(record(first.routine(), s.transforms)));
  Elementwise second(256, 64);
  EXPECT_EQ(ir::print_loop_ir(replay(second.routine(), trace)), ir::print_loop_ir(s.routine));
}

TEST(ScheduleTrace, InterleavedSplitReduceRoundTrips) {
  RowSum first(6, 300);
  const std::vector<Transform> steps = {Retype{first.i, ir::AxisType::Grid},
                                        split_reduce_lanes(first.r, 64, ir::AxisType::Vectorized)};
  const std::string text = print_trace(record(first.routine(), steps));
  EXPECT_NE(text.find("\nsplit_reduce i1 lanes 64 vectorized\n"), std::string::npos) << text;
  RowSum second(6, 300);
  const auto replayed = replay(second.routine(), parse_trace(text));
  EXPECT_EQ(ir::print_loop_ir(replayed), ir::print_loop_ir(schedule::apply(first.routine(), steps)));
}

// Each transform writes and reads its own arguments (src/schedule/<transform>.cpp); the text of
// the forms the other tests do not pin stays as it was.
TEST(ScheduleTrace, RetypeUnrollPrivatizeAndBlockedSplitReduceRoundTrip) {
  for (const bool blocked : {false, true}) {
    RowSum first(6, 300);
    const std::vector<Transform> steps =
        blocked ? std::vector<Transform>{SplitReduce{first.r, 4}}
                : std::vector<Transform>{Privatize{first.s->id, first.r}, Retype{first.i, ir::AxisType::Grid},
                                         Unroll{first.r, false}};
    const std::string text = print_trace(record(first.routine(), steps));
    EXPECT_NE(text.find(blocked ? "\nsplit_reduce i1 4\n" : "\nprivatize n0 i1\nretype i0 grid\nunroll i1 annotate\n"),
              std::string::npos) << text;
    RowSum second(6, 300);
    const auto replayed = replay(second.routine(), parse_trace(text));
    EXPECT_EQ(ir::print_loop_ir(replayed), ir::print_loop_ir(schedule::apply(first.routine(), steps)));
  }
}

TEST(ScheduleTrace, ADifferentProgramIsRefusedByTheDigest) {
  Matmul first(4, 4, 4);
  const ScheduleTrace trace = record(first.routine(), {split(first.i, 2)});
  Matmul other(4, 4, 5);
  expect_schedule_error([&] { replay(other.routine(), trace); }, {"digest", "made for another program"});
}

TEST(ScheduleTrace, MalformedTextIsAScheduleError) {
  Matmul mm(4, 4, 4);
  const std::string digest = program_digest(mm.routine());
  expect_schedule_error([&] { parse_trace("schedule 2\n"); }, {"first line must be 'cannl-schedule 1'"});
  expect_schedule_error([&] { parse_trace("cannl-schedule 1\ndigest 12\n"); }, {"64 hex digits"});
  const std::string head = "cannl-schedule 1\ndigest " + digest + "\n";
  expect_schedule_error([&] { replay(mm.routine(), parse_trace(head + "split i9 2 serial serial\n")); }, {"no loop i9"});
  expect_schedule_error([&] { replay(mm.routine(), parse_trace(head + "split i0 two serial serial\n")); }, {"'two' is not an integer"});
  expect_schedule_error([&] { replay(mm.routine(), parse_trace(head + "retype i0 warp\n")); }, {"unknown axis type 'warp'"});
  expect_schedule_error([&] { replay(mm.routine(), parse_trace(head + "fuse i0\n")); }, {"unknown transform 'fuse'"});
}

}  // namespace
}  // namespace cannl::schedule::testing
