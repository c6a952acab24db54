// The memory budget: sizes from user input past it are a named error before allocating.
#include "cannl/support/memory_budget.h"

#include <gtest/gtest.h>

#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "support/config_test_fixture.h"

namespace cannl {
namespace {

using MemoryBudgetTest = testing::ConfigEnvironment;

TEST_F(MemoryBudgetTest, ConfiguredInMebibytesOrHalfOfThePhysicalMemory) {
  EXPECT_GT(memory::budget_bytes(), std::int64_t{1} << 20) << "0 = half of the physical memory";
  config::set_override("memory_budget_mb", "64");
  EXPECT_EQ(memory::budget_bytes(), std::int64_t{64} << 20);
  config::set_override("memory_budget_mb", "-1");
  EXPECT_THROW(memory::budget_bytes(), ConfigError);
}

TEST_F(MemoryBudgetTest, OverTheBudgetIsANamedError) {
  config::set_override("memory_budget_mb", "64");
  memory::check_budget(std::int64_t{64} << 20, "just fits");
  try {
    memory::check_budget((std::int64_t{64} << 20) + 1, "tensor 'w'");
    ADD_FAILURE() << "over the budget accepted";
  } catch (const RuntimeUsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("tensor 'w' needs 64.0 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("memory_budget_mb"), std::string::npos) << message;
  }
  EXPECT_THROW(memory::check_budget(-1, "an overflowed size"), RuntimeUsageError);
}

TEST_F(MemoryBudgetTest, FormatsSizes) {
  EXPECT_EQ(memory::format_bytes(12), "12 bytes");
  EXPECT_EQ(memory::format_bytes(3 << 19), "1.5 MiB");
  EXPECT_EQ(memory::format_bytes(std::int64_t{1} << 40), "1.0 TiB");
}

}  // namespace
}  // namespace cannl
