// cc backend errors: a failing compiler (CompileError with command, compiler output and .c path)
// and a missing one (BackendUnavailable saying how to fix it).
#include <gtest/gtest.h>

#include "backends/routines.h"
#include "backends/run_util.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"

namespace cannl {
namespace {

TEST(CcErrors, FailingCompilerReportsCommandOutputAndSourcePath) {
  test_util::ConfigGuard guard;
  config::set_override("cc_extra_flags", "-fno-such-flag-xyz");
  auto backend = backends::make_cc_backend();
  auto request = test_routines::pointwise_add(3, "bad_flags");
  try {
    backend->compile(request);
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    const std::string m = e.what();
    const auto command = m.find("command: ");
    ASSERT_NE(command, std::string::npos) << m;
    EXPECT_NE(m.find("-fno-such-flag-xyz", command), std::string::npos) << m;
    const auto output = m.find("compiler output:");
    ASSERT_NE(output, std::string::npos) << m;
    EXPECT_NE(m.find("no-such-flag-xyz", output), std::string::npos) << "stderr text missing: " << m;
    EXPECT_NE(m.find((files::build_dir() / "bad_flags.c").string()), std::string::npos) << m;
  }
}

TEST(CcErrors, MissingCompilerIsBackendUnavailable) {
  test_util::ConfigGuard guard;
  config::set_override("cc_compiler", "/nonexistent/cc");
  try {
    backends::make_cc_backend();
    FAIL() << "expected BackendUnavailable";
  } catch (const BackendUnavailable& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("/nonexistent/cc"), std::string::npos) << m;
    EXPECT_NE(m.find("cc_compiler"), std::string::npos) << m;
    EXPECT_NE(m.find("install gcc"), std::string::npos) << m;
  }
}

TEST(CcErrors, CompilerThatDoesNotRunIsBackendUnavailable) {
  test_util::ConfigGuard guard;
  auto backend = backends::make_cc_backend();  // a working compiler at creation
  config::set_override("cc_compiler", "false");  // exists but `false --version` fails
  EXPECT_THROW(backend->compile(test_routines::pointwise_add(2, "no_compiler")), BackendUnavailable);
}

TEST(CcErrors, BadFpContractIsConfigError) {
  test_util::ConfigGuard guard;
  config::set_override("cc_fp_contract", "sometimes");
  auto backend = backends::make_cc_backend();
  try {
    backend->compile(test_routines::pointwise_add(2, "bad_contract"));
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cc_fp_contract"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cannl
