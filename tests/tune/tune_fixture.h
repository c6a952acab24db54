#pragma once
// The fixture of the tuner's tests (tests/tune): a fresh tensor state, one repeat a timing, a
// schedule cache folder of the test's own, and a quick search.
//
//   TEST_F(Tune, Something) { tune::TuneOptions o = quick(); o.hooks.measure = ...; }

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cannl/cannl.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/support/files.h"
#include "cannl/tune/tune.h"

namespace cannl::tune_test {

class Tune : public testing::Test {
 protected:
  void SetUp() override {
    reset_tensor_state();
    config::set_override("autotune_repeats", "1");
    cache_dir_ = files::build_dir() / ("schedule_cache_" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(cache_dir_);
  }
  void TearDown() override { config::clear_overrides(); }

  /// A quick search: no target sweeps, no rounds, a private cache folder.
  tune::TuneOptions quick() const {
    tune::TuneOptions o = tune::TuneOptions::from_config();
    o.sweep_target = false;
    o.rounds = 0;
    o.cache_dir = cache_dir_;
    return o;
  }

  std::filesystem::path cache_dir_;
};

/// Runs `r` in `ctx` and reads `y` back.
inline std::vector<std::byte> run_and_read(runtime::Context& ctx, const runtime::Routine& r, const Tensor& y) {
  ctx.run(r);
  return ctx.get_bytes(y.value());
}

/// The index of the first loop of `stmt` in program order.
inline ir::Symbol outermost_loop(const ir::StmtRef& stmt) {
  if (const auto* f = std::get_if<ir::For>(&stmt->node)) return f->index;
  if (const auto* seq = std::get_if<ir::Seq>(&stmt->node))
    for (const auto& s : seq->stmts)
      if (ir::Symbol found = outermost_loop(s); found != ir::Symbol{}) return found;
  return ir::Symbol{};
}

}  // namespace cannl::tune_test
