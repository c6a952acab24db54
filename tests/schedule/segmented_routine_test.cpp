// The default schedules apply a nest's transforms to the top-level statement holding it
// (SegmentedRoutine) and find loops in one walk (loop_sites): both must give what the
// whole-routine forms give.
#include <gtest/gtest.h>

#include <random>

#include "cannl/ir/lower.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/default_cpu.h"
#include "cannl/schedule/transforms.h"
#include "opt/program_generator.h"
#include "schedule/loop_tree.h"
#include "cannl/support/error.h"
#include "schedule/segmented_routine.h"

namespace cannl::schedule::testing {
namespace {

// Generated programs concatenated into one routine: many top-level statements.
ir::LoweredRoutine batch(std::uint64_t first_seed, int programs) {
  std::vector<opt::testing::GeneratedProgram> parts;
  for (int k = 0; k < programs; ++k)
    parts.push_back(opt::testing::generate_program(first_seed + static_cast<std::uint64_t>(k), "b" + std::to_string(k) + "_"));
  return ir::lower(opt::testing::concatenate(parts).comp, "batch");
}

TEST(LoopSites, AgreeWithFindLoop) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const ir::LoweredRoutine r = batch(9100 + 10 * seed, 6);
    std::vector<const ir::For*> preorder;
    ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
      if (const auto* f = std::get_if<ir::For>(&s.node)) preorder.push_back(f);
    });
    const auto sites = detail::loop_sites(r.body);
    ASSERT_EQ(sites.size(), preorder.size()) << "seed " << seed;
    for (std::size_t k = 0; k < sites.size(); ++k) {
      const auto found = detail::find_loop(r.body, sites[k].loop->index);
      ASSERT_TRUE(found);
      EXPECT_EQ(sites[k].loop, preorder[k]);
      EXPECT_EQ(sites[k].loop, found->loop);
      EXPECT_EQ(sites[k].stmt, found->stmt);
      EXPECT_EQ(sites[k].enclosing, found->enclosing);
      EXPECT_EQ(sites[k].in_local_scope, found->in_local_scope);
      EXPECT_EQ(sites[k].in_tile, found->in_tile);
      EXPECT_EQ(sites[k].under_if, found->under_if);
    }
  }
}

// A transform of one loop, applied to its segment and to the whole routine: the same routine,
// or refused by both.
TEST(SegmentedRoutine, ApplyEqualsApplyingToTheWhole) {
  std::mt19937_64 rng(11);
  auto number = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int accepted = 0, refused = 0;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    detail::SegmentedRoutine segmented(batch(9300 + 10 * seed, 6));
    ASSERT_GT(segmented.size(), 1u);
    for (int step = 0; step < 12; ++step) {
      // Both forms start from the same routine (transforms mint symbols as they apply).
      const ir::LoweredRoutine whole = segmented.whole();
      const auto sites = detail::loop_sites(whole.body);
      if (sites.empty()) break;
      const detail::LoopSite& site = sites[static_cast<std::size_t>(number(0, static_cast<int>(sites.size()) - 1))];
      const ir::Symbol s = site.loop->index;
      const int extent = static_cast<int>(site.loop->end - site.loop->begin);
      const auto body = detail::flatten_seq(site.loop->body);
      const auto* inner = body.size() == 1 ? std::get_if<ir::For>(&body[0]->node) : nullptr;
      Transform t = Retype{s, ir::AxisType::Grid};
      switch (number(0, 4)) {
        case 0: t = split(s, number(1, extent + 1)); break;
        case 1: t = Swap{s, inner ? inner->index : s}; break;
        case 2: t = Retype{s, number(0, 1) ? ir::AxisType::Grid : ir::AxisType::Vectorized}; break;
        case 3: t = Unroll{s, extent <= 8}; break;
        default: t = Partition{s, {site.loop->begin + number(0, extent)}}; break;
      }
      std::optional<ir::LoweredRoutine> expected;
      try {
        expected = schedule::apply(whole, t);
      } catch (const ScheduleError&) {
      }
      const auto segment = segmented.holder(s);
      ASSERT_TRUE(segment);
      try {
        segmented.apply(*segment, {t});
        ASSERT_TRUE(expected) << transform_name(t) << " refused on the whole routine only";
        ++accepted;
      } catch (const ScheduleError&) {
        EXPECT_FALSE(expected) << transform_name(t) << " refused on its segment only";
        ++refused;
        continue;
      }
      EXPECT_EQ(ir::print_loop_ir(segmented.whole()), ir::print_loop_ir(*expected)) << transform_name(t);
    }
  }
  EXPECT_GT(accepted, 20);
  EXPECT_GT(refused, 0);
}

// The default CPU schedule applies its plans segment by segment: its recorded transforms,
// replayed on the whole routine, give the routine it returned.
TEST(SegmentedRoutine, DefaultCpuScheduleReplaysOnTheWhole) {
  CpuScheduleOptions options;
  options.min_parallel = 4;
  options.min_tile_work = 1;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    const ir::LoweredRoutine r = batch(9500 + 10 * seed, 8);
    const ScheduledRoutine s = default_cpu_schedule(r, options);
    ASSERT_FALSE(s.transforms.empty()) << "seed " << seed;
    EXPECT_EQ(ir::print_loop_ir(schedule::apply(r, s.transforms)), ir::print_loop_ir(s.routine)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace cannl::schedule::testing
