// Differential testing of the optimizer: generated programs run optimized and with
// optimize=false must give the same bits (generated programs use only re-association-free
// arithmetic on exactly representable values), on the interpreter and on the C backend; the C
// backend's unoptimized run must also give the interpreter's bits.
//
//   CANNL_TEST_DIFF_PROGRAMS=20000 ./test_opt --gtest_filter='Differential.*'   (default 300)
//   CANNL_TEST_DIFF_C_PROGRAMS=20000 CANNL_TEST_DIFF_C_BATCH=20 ...             (default 40, 20)
//   CANNL_TEST_DIFF_C_FIRST=680 ...   starts the C run at its 680th program (reproduce, resume)
// The C run compiles one routine per batch of programs. ~20 is the cheapest per program: the C
// compiler's time grows faster than linearly with the size of one function (a batch of 100 costs
// more than 5 batches of 20, a batch of 400 ten times a batch of 100).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cannl/ir/assignments.h"
#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "opt/program_generator.h"

namespace cannl::opt::testing {
namespace {

std::int64_t env_count(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoll(v, nullptr, 10) : fallback;
}

std::vector<std::vector<std::byte>> run(runtime::Context ctx, const GeneratedProgram& p,
                                        bool optimize) {
  config::set_override("optimize", optimize ? "true" : "false");
  runtime::Routine routine;
  try {
    routine = ctx.compile(p.comp, "generated");
  } catch (...) {
    config::set_override("optimize", "");
    throw;
  }
  config::set_override("optimize", "");
  for (std::size_t k = 0; k < p.inputs.size(); ++k) ctx.set_values(p.inputs[k], p.input_values[k]);
  ctx.run(routine);
  std::vector<std::vector<std::byte>> out;
  for (const auto& n : p.outputs) out.push_back(ctx.get_bytes(n));
  return out;
}

/// "" when equal (bitwise, or within tolerance when re-association is licensed).
std::string compare(const GeneratedProgram& p, const std::vector<std::vector<std::byte>>& a,
                    const std::vector<std::vector<std::byte>>& b) {
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k] == b[k]) continue;
    const std::size_t n = a[k].size() / sizeof(float);
    for (std::size_t e = 0; e < n; ++e) {
      float x, y;
      std::memcpy(&x, a[k].data() + e * sizeof(float), sizeof x);
      std::memcpy(&y, b[k].data() + e * sizeof(float), sizeof y);
      const bool close = std::fabs(x - y) <= 1e-5f * std::max(1.0f, std::fabs(x));
      if (std::memcmp(&x, &y, sizeof x) != 0 && !(p.reassociation_licensed && close))
        return p.outputs[k]->debug_name() + "[" + std::to_string(e) + "]: unoptimized " +
               std::to_string(x) + ", optimized " + std::to_string(y);
    }
  }
  return "";
}

void check_batch(const std::vector<std::uint64_t>& seeds, bool use_cc) {
  std::vector<GeneratedProgram> programs;
  for (auto s : seeds) programs.push_back(generate_program(s, "p" + std::to_string(s) + "_"));
  const GeneratedProgram all = concatenate(programs);
  auto make = [&] { return use_cc ? runtime::Context::cpu() : runtime::Context::interpreter(); };
  const auto plain = run(make(), all, false);
  const auto optimized = run(make(), all, true);
  std::string diff = compare(all, plain, optimized);
  if (diff.empty() && use_cc) {
    // The C text against the interpreter, the oracle: a C compiler's own fold (GCC 12 turned a
    // negated fmaf into fnmsub, ops.def Neg) is in both C runs alike and shows only here.
    const std::string across = compare(all, run(runtime::Context::interpreter(), all, false), plain);
    if (!across.empty()) diff = "interpreter against the C backend: " + across;
  }
  if (!diff.empty() && seeds.size() > 1) {
    for (auto s : seeds) check_batch({s}, use_cc);  // narrow down to one seed
    // A difference that only the combined program shows is still a miscompile: report it.
    if (!::testing::Test::HasFailure())
      ADD_FAILURE() << "seeds " << seeds.front() << ".." << seeds.back()
                    << " differ only when combined:\n" << diff;
    return;
  }
  EXPECT_EQ(diff, "") << "seed " << seeds.front() << "\n" << ir::print_assignments(all.comp);
}

TEST(Differential, InterpreterOptimizedMatchesUnoptimized) {
  const std::int64_t n = env_count("CANNL_TEST_DIFF_PROGRAMS", 300);
  for (std::int64_t s = 0; s < n && !HasFailure(); ++s)
    check_batch({static_cast<std::uint64_t>(1000 + s)}, false);
  std::printf("differential (interpreter): %lld programs\n", static_cast<long long>(n));
}

TEST(Differential, CBackendOptimizedMatchesUnoptimized) {
  try {
    (void)runtime::Context::cpu();
  } catch (const BackendUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
  const std::int64_t n = env_count("CANNL_TEST_DIFF_C_PROGRAMS", 40);
  const std::int64_t first = env_count("CANNL_TEST_DIFF_C_FIRST", 0);
  // Programs per compiled routine (see the file comment for the size).
  const std::int64_t batch = std::max<std::int64_t>(1, env_count("CANNL_TEST_DIFF_C_BATCH", 20));
  std::int64_t s = first;
  for (; s < n && !HasFailure(); s += batch) {
    std::vector<std::uint64_t> seeds;
    for (std::int64_t k = s; k < std::min(n, s + batch); ++k) seeds.push_back(50000 + static_cast<std::uint64_t>(k));
    check_batch(seeds, true);
  }
  std::printf("differential (C backend): programs %lld..%lld\n", static_cast<long long>(first),
              static_cast<long long>(std::min(n, s) - 1));
}

}  // namespace
}  // namespace cannl::opt::testing
