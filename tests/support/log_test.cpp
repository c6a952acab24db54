// Logging: prefixes, the debug level from config, and the phase timer's output threshold.
#include "cannl/support/log.h"

#include <gtest/gtest.h>

#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "support/config_test_fixture.h"

namespace cannl {
namespace {

using LogTest = testing::ConfigEnvironment;

TEST_F(LogTest, InfoAndWarnPrefixes) {
  ::testing::internal::CaptureStderr();
  logging::info("hello");
  logging::warn("careful");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "[cannl] hello\n[cannl] warning: careful\n");
}

TEST_F(LogTest, DebugLevelFollowsConfig) {
  EXPECT_EQ(logging::debug_level(), 0);
  ::setenv("CANNL_DEBUG", "3", 1);
  config::reload();
  EXPECT_EQ(logging::debug_level(), 3);
  config::set_override("debug", "x");
  EXPECT_THROW(logging::debug_level(), ConfigError);
}

TEST_F(LogTest, ScopedTimerIsSilentAtLevelZero) {
  ::testing::internal::CaptureStderr();
  { logging::ScopedTimer timer("lower"); }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(LogTest, ScopedTimerPrintsPhaseAndMillisecondsAtLevelOne) {
  config::set_override("debug", "1");
  ::testing::internal::CaptureStderr();
  { logging::ScopedTimer timer("lower"); }
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("[cannl] lower: ", 0), 0u) << err;
  EXPECT_NE(err.find(" ms\n"), std::string::npos) << err;
}

TEST_F(LogTest, ScopedTimerSwallowsBadDebugValue) {
  config::set_override("debug", "loud");
  ::testing::internal::CaptureStderr();
  { logging::ScopedTimer timer("lower"); }  // must not throw from a destructor
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace cannl
