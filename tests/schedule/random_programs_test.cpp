// Differential testing of the schedule transforms on the optimizer's random programs
// (tests/opt/program_generator.h): random transforms with random (often illegal) arguments are
// applied to lowered and optimized programs; whatever is accepted must compute the same as the
// original on the reference interpreter (bitwise, except Swap and Split_reduce, which may
// re-associate a reduction). Rejections must be ScheduleErrors. The default CPU schedule must be
// bitwise equal on the interpreter and, compiled, on the C backend.
//
//   CANNL_TEST_SCHEDULE_PROGRAMS=5000 ./test_schedule --gtest_filter='RandomPrograms.*'   (default 150)
//   CANNL_TEST_SCHEDULE_CC_BATCHES=50 ...   batches of 40 programs for the C-backend tests (default 1)
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>

#include "backends/run_util.h"
#include "cannl/ir/lower.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/opt/optimize.h"
#include "cannl/schedule/default_cpu.h"
#include "cannl/schedule/transforms.h"
#include "opt/program_generator.h"
#include "schedule/access_relations.h"
#include "schedule/loop_tree.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

std::int64_t env_count(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoll(v, nullptr, 10) : fallback;
}

// The C-backend tests compile batches of 40 programs, one routine per batch; batch b of a test
// takes the seeds base + 40 b .. + 39, so longer runs see new programs.
std::int64_t cc_batches() { return env_count("CANNL_TEST_SCHEDULE_CC_BATCHES", 1); }

std::vector<opt::testing::GeneratedProgram> generated_batch(std::uint64_t base, std::int64_t b, const std::string& prefix) {
  std::vector<opt::testing::GeneratedProgram> programs;
  for (std::uint64_t k = 0; k < 40; ++k) {
    const std::uint64_t seed = base + 40 * static_cast<std::uint64_t>(b) + k;
    programs.push_back(opt::testing::generate_program(seed, prefix + std::to_string(seed) + "_"));
  }
  return programs;
}

ir::LoweredRoutine program(std::uint64_t seed, bool optimized, const std::string& prefix = "") {
  const auto p = opt::testing::generate_program(seed, prefix);
  const ir::LoweredRoutine lowered = ir::lower(p.comp, "generated");
  if (!optimized) return lowered;
  return opt::optimize(lowered, opt::PassContext::from_config("generated"), true).routine;
}

class RandomTransforms {
 public:
  explicit RandomTransforms(std::uint64_t seed) : rng_(seed), fold_rng_(seed + 1) {}

  /// A random transform for `r`, or nullopt when the routine has nothing to address.
  std::optional<Transform> pick(const ir::LoweredRoutine& r) {
    const auto loops = detail::canonical_loops(r.body);
    if (loops.empty()) return std::nullopt;
    const ir::Symbol s = loops[static_cast<std::size_t>(number(0, static_cast<int>(loops.size()) - 1))];
    const auto site = detail::find_loop(r.body, s);
    const int extent = static_cast<int>(site->loop->end - site->loop->begin);
    switch (number(0, 11)) {
      case 0: return split(s, number(-1, extent + 1), any_type(), any_type());
      case 1: {
        const auto body = detail::flatten_seq(site->loop->body);
        const auto* inner = body.size() == 1 ? std::get_if<ir::For>(&body[0]->node) : nullptr;
        return Swap{s, inner ? inner->index : s};
      }
      case 2: return Retype{s, any_type()};
      case 3: return Unroll{s, extent <= 8};
      case 4: return Pad{s, number(1, 5)};
      case 5: {
        const ir::Symbol a = loops[static_cast<std::size_t>(number(0, static_cast<int>(loops.size()) - 1))];
        const ir::Symbol b = loops[static_cast<std::size_t>(number(0, static_cast<int>(loops.size()) - 1))];
        Tensorize t{s, a, b};
        // Sometimes fold enclosing loops of s too (the transform checks their roles).
        const std::size_t outer = site->enclosing.size();
        const int folds = std::uniform_int_distribution<int>(0, static_cast<int>(std::min<std::size_t>(outer, 3)))(fold_rng_);
        for (std::size_t n = static_cast<std::size_t>(folds); n > 0; --n)
          t.fold.push_back(site->enclosing[outer - n]->index);
        return t;
      }
      case 6: {
        const auto nodes = ir::nodes_of(r.body);
        return ExpandZero{nodes[static_cast<std::size_t>(number(0, static_cast<int>(nodes.size()) - 1))]->id};
      }
      case 7: return number(0, 1) ? Transform{SplitReduce{s, number(2, 4)}} : Transform{split_reduce_lanes(s, number(1, 9), any_type())};
      case 8: {
        const auto nodes = ir::nodes_of(r.body);
        const int source = nodes[static_cast<std::size_t>(number(0, static_cast<int>(nodes.size()) - 1))]->id;
        return Stage{source, s, number(0, 2) == 0};  // a third packed once, out of the routine
      }
      case 9: return Partition{s, {site->loop->begin + number(0, extent)}};
      case 11: {
        // Anchors are mostly top-level loops and targets nodes they write: pick among those.
        std::vector<const ir::For*> top;
        for (const auto& x : detail::flatten_seq(r.body))
          if (const auto* f = std::get_if<ir::For>(&x->node)) top.push_back(f);
        const ir::For* anchor = top.empty() ? site->loop : top[static_cast<std::size_t>(number(0, static_cast<int>(top.size()) - 1))];
        std::vector<int> written;
        for (const auto& a : detail::collect_accesses(anchor->body).accesses)
          if (a.write) written.push_back(a.node->id);
        if (written.empty()) return FuseEpilogue{ir::nodes_of(r.body)[0]->id, anchor->index};
        return FuseEpilogue{written[static_cast<std::size_t>(number(0, static_cast<int>(written.size()) - 1))], anchor->index};
      }
      default: {
        const auto nodes = ir::nodes_of(r.body);
        return Privatize{nodes[static_cast<std::size_t>(number(0, static_cast<int>(nodes.size()) - 1))]->id, s};
      }
    }
  }

 private:
  std::mt19937_64 rng_;
  std::mt19937_64 fold_rng_;  // its own stream: folds do not shift the other transforms' draws
  int number(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  ir::AxisType any_type() {
    static const ir::AxisType types[] = {ir::AxisType::Serial, ir::AxisType::Grid, ir::AxisType::Vectorized,
                                         ir::AxisType::Unrolled};
    return types[number(0, 3)];
  }
};

bool reassociates(const Transform& t) {
  return std::holds_alternative<Swap>(t) || std::holds_alternative<SplitReduce>(t);
}

// The transform's name, the interleaved Split_reduce told apart so the tests see it accepted.
std::string kind_of(const Transform& t) {
  const auto* r = std::get_if<SplitReduce>(&t);
  return r && r->lanes > 0 ? "split_reduce_lanes" : transform_name(t);
}

TEST(RandomPrograms, AcceptedTransformsKeepTheResults) {
  const std::int64_t n = env_count("CANNL_TEST_SCHEDULE_PROGRAMS", 150);
  std::map<std::string, int> accepted, rejected;
  RandomTransforms random(7);
  for (std::int64_t seed = 0; seed < n && !HasFailure(); ++seed) {
    const ir::LoweredRoutine original = program(static_cast<std::uint64_t>(3000 + seed), seed % 2 == 0);
    const NodeBytes expected = run_interp(original);
    ir::LoweredRoutine current = original;
    Tolerance tolerance = Tolerance::Bitwise;
    for (int step = 0; step < 6 && !HasFailure(); ++step) {
      const auto t = random.pick(current);
      if (!t) break;
      try {
        current = schedule::apply(current, *t);
      } catch (const ScheduleError&) {
        ++rejected[kind_of(*t)];
        continue;
      }
      ++accepted[kind_of(*t)];
      if (reassociates(*t)) tolerance = Tolerance::Reassociated;
      EXPECT_EQ(compare(expected, run_interp(current), tolerance), "")
          << "seed " << 3000 + seed << " after " << transform_name(*t) << "\n" << ir::print_loop_ir(original)
          << "\nbecame\n" << ir::print_loop_ir(current);
    }
  }
  for (const char* kind : {"split", "swap", "retype", "unroll", "pad", "expand_zero", "split_reduce", "split_reduce_lanes",
                           "stage", "partition", "privatize", "fuse_epilogue"})
    EXPECT_GT(accepted[kind], 0) << kind << " was never accepted: the test would not check it";
  for (const char* kind : {"split", "swap", "tensorize", "split_reduce", "split_reduce_lanes", "stage", "partition", "fuse_epilogue"})
    EXPECT_GT(rejected[kind], 0) << kind << " was never rejected";
  for (const auto& [kind, count] : accepted) std::printf("%s: %d accepted, %d rejected\n", kind.c_str(), count, rejected[kind]);
}

TEST(RandomPrograms, DefaultCpuScheduleIsBitwiseOnTheInterpreter) {
  const std::int64_t n = env_count("CANNL_TEST_SCHEDULE_PROGRAMS", 150);
  CpuScheduleOptions options;
  options.min_parallel = 4;  // generated programs are tiny: annotate them anyway
  options.min_tile_work = 1;
  options.reassociate = false;  // bitwise against the serial program
  int annotated = 0;
  for (std::int64_t seed = 0; seed < n && !HasFailure(); ++seed) {
    const ir::LoweredRoutine original = program(static_cast<std::uint64_t>(5000 + seed), true);
    const ScheduledRoutine s = default_cpu_schedule(original, options);
    annotated += s.transforms.empty() ? 0 : 1;
    EXPECT_EQ(compare(run_interp(original), run_interp(s.routine), Tolerance::Bitwise), "")
        << "seed " << 5000 + seed << "\n" << ir::print_loop_ir(s.routine);
  }
  EXPECT_GT(annotated, n / 2);
}

void default_schedule_on_cc(const ir::LoweredRoutine& lowered) {
  CpuScheduleOptions options;
  options.min_parallel = 4;
  options.min_tile_work = 1;
  options.reassociate = false;  // bitwise against the serial program
  const ScheduledRoutine s = default_cpu_schedule(lowered, options);
  ASSERT_FALSE(s.transforms.empty());
  const auto params = ir::nodes_of(lowered.body);
  const std::vector<test_util::Bytes> inputs = test_inputs(params);
  const auto serial = test_util::run_on(*test_util::cc(), {lowered, params}, inputs);
  const auto scheduled = test_util::run_on(*test_util::cc(), {s.routine, params}, inputs);
  for (std::size_t k = 0; k < params.size(); ++k)
    EXPECT_EQ(serial[k], scheduled[k]) << params[k]->debug_name() << "\n" << ir::print_loop_ir(s.routine);
}

// Generated programs concatenated into one routine, compiled with and without the default
// schedule: with OpenMP Grid loops and SIMD rendering the results must stay bitwise equal.
TEST(RandomPrograms, DefaultCpuScheduleIsBitwiseOnTheCBackend) {
  try {
    (void)test_util::cc();
  } catch (const BackendUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
  for (std::int64_t b = 0; b < cc_batches() && !HasFailure(); ++b) {
    SCOPED_TRACE("batch " + std::to_string(b) + " (seeds from " + std::to_string(7000 + 40 * b) + ")");
    default_schedule_on_cc(ir::lower(opt::testing::concatenate(generated_batch(7000, b, "p")).comp, "generated_batch"));
  }
}

void reassociating_schedule_on_cc(const ir::LoweredRoutine& lowered) {
  CpuScheduleOptions options;
  options.min_parallel = 4;
  options.min_tile_work = 1;
  options.reassociate_lanes = 2;
  options.min_reassociate_extent = 2;
  const ScheduledRoutine s = default_cpu_schedule(lowered, options);
  const auto interleaved = std::count_if(s.transforms.begin(), s.transforms.end(), [](const Transform& t) {
    return std::holds_alternative<SplitReduce>(t);
  });
  ASSERT_GT(interleaved, 0) << ir::print_loop_ir(lowered);
  const NodeBytes on_interp = run_interp(s.routine);
  EXPECT_EQ(compare(run_interp(lowered), on_interp, Tolerance::Reassociated), "");
  const auto params = ir::nodes_of(lowered.body);
  const std::vector<test_util::Bytes> inputs = test_inputs(params);
  const auto compiled = test_util::run_on(*test_util::cc(), {s.routine, params}, inputs);
  for (std::size_t k = 0; k < params.size(); ++k)
    EXPECT_EQ(compiled[k], on_interp.at(params[k]->id)) << params[k]->debug_name() << "\n" << ir::print_loop_ir(s.routine);
}

// With re-association licensed (and the thresholds lowered for tiny programs) the scheduled
// routine computes the same bits on the C backend as on the interpreter, and stays within
// rounding of the serial program.
TEST(RandomPrograms, ReassociatingDefaultScheduleAgreesAcrossBackends) {
  try {
    (void)test_util::cc();
  } catch (const BackendUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
  for (std::int64_t b = 0; b < cc_batches() && !HasFailure(); ++b) {
    SCOPED_TRACE("batch " + std::to_string(b) + " (seeds from " + std::to_string(8000 + 40 * b) + ")");
    reassociating_schedule_on_cc(ir::lower(opt::testing::concatenate(generated_batch(8000, b, "r")).comp, "reassociated_batch"));
  }
}

void transforms_on_cc(const ir::LoweredRoutine& original, unsigned transform_seed) {
  RandomTransforms random(transform_seed);
  ir::LoweredRoutine current = original;
  Tolerance tolerance = Tolerance::Bitwise;
  int accepted = 0;
  for (int step = 0; step < 120; ++step) {
    const auto t = random.pick(current);
    try {
      current = schedule::apply(current, *t);
    } catch (const ScheduleError&) {
      continue;
    }
    ++accepted;
    if (reassociates(*t)) tolerance = Tolerance::Reassociated;
  }
  EXPECT_GT(accepted, 20);
  const auto params = ir::nodes_of(original.body);
  const std::vector<test_util::Bytes> inputs = test_inputs(params);
  const auto before = test_util::run_on(*test_util::cc(), {original, params}, inputs);
  const auto after = test_util::run_on(*test_util::cc(), {current, params}, inputs);
  NodeBytes expected, actual;
  for (std::size_t k = 0; k < params.size(); ++k) {
    expected[params[k]->id] = before[k];
    actual[params[k]->id] = after[k];
  }
  EXPECT_EQ(compare(expected, actual, tolerance), "") << ir::print_loop_ir(current);
}

// Random accepted transforms on a concatenation of programs, compiled by the C backend: the
// printer and the dialect must render every transformed form (guards, locals, tiles, annotated
// loops) to the same results as the untransformed routine.
TEST(RandomPrograms, AcceptedTransformsKeepTheResultsOnTheCBackend) {
  try {
    (void)test_util::cc();
  } catch (const BackendUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
  for (std::int64_t b = 0; b < cc_batches() && !HasFailure(); ++b) {
    SCOPED_TRACE("batch " + std::to_string(b) + " (seeds from " + std::to_string(9000 + 40 * b) + ")");
    transforms_on_cc(ir::lower(opt::testing::concatenate(generated_batch(9000, b, "q")).comp, "transformed_batch"),
                     static_cast<unsigned>(11 + b));
  }
}

}  // namespace
}  // namespace cannl::schedule::testing
