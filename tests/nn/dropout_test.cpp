// Dropout: counter-based masks keyed by the step symbol, inverted scaling, identity cases.
#include <gtest/gtest.h>

#include "cannl/cannl.h"
#include "cannl/nn/functional.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

class Dropout : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }
  void TearDown() override { config::clear_overrides(); }
};

TEST_F(Dropout, MasksChangePerStepAndRepeatPerStep) {
  const double rate = 0.25;
  ir::StaticSymbol step{ir::fresh_symbol(), 100, "step"};
  Tensor x = literal("x", std::vector<double>(4000, 2.0), {.batch = Dims{4000}});
  Tensor y = nn::dropout(x, step, {.rate = rate, .stream = "drop"});
  auto ctx = runtime::Context::interpreter();
  auto routine = train::compile_forward(ctx, {y}, "dropout");
  auto run_at = [&](std::int64_t s) {
    const std::vector<std::int64_t> statics = {s};
    ctx.run(routine, statics);
    return ctx.get_values(y.value());
  };
  const auto first = run_at(3), second = run_at(4), again = run_at(3);
  EXPECT_EQ(first, again);
  EXPECT_NE(first, second);
  std::size_t zeros = 0;
  for (double v : first) {
    EXPECT_TRUE(v == 0.0 || std::abs(v - 2.0 / (1 - rate)) < 1e-6) << v;
    zeros += v == 0.0;
  }
  EXPECT_NEAR(static_cast<double>(zeros) / 4000.0, rate, 0.03);
}

TEST_F(Dropout, IdentityWhenRateZeroOrNotTraining) {
  ir::StaticSymbol step{ir::fresh_symbol(), 10, "step"};
  Tensor x = literal("x", {1, 2, 3}, {.batch = Dims{3}});
  EXPECT_EQ(nn::dropout(x, step, {.rate = 0.0}).id(), x.id());
  EXPECT_EQ(nn::dropout(x, step, {.rate = 0.5, .training = false}).id(), x.id());
}

TEST_F(Dropout, RejectsRateOutsideUnitInterval) {
  ir::StaticSymbol step{ir::fresh_symbol(), 10, "step"};
  Tensor x = literal("x", {1, 2, 3}, {.batch = Dims{3}});
  try {
    nn::dropout(x, step, {.rate = 1.0});
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rate must lie in [0, 1)"), std::string::npos);
  }
}

}  // namespace
}  // namespace cannl
