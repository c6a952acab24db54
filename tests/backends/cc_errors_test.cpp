// cc backend errors: a failing compiler (CompileError with command, compiler output and .c path)
// and a missing one (BackendUnavailable saying how to fix it).
#include <gtest/gtest.h>

#include "backends/routines.h"
#include "backends/run_util.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "support/sanitizers.h"

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

TEST(CcErrors, UnallocatableScratchIsAResourceErrorNotACrash) {
#if defined(CANNL_TEST_UNDER_ASAN)
  GTEST_SKIP() << "AddressSanitizer aborts on the impossible allocation itself";
#else
  // A local array of 2^40 floats (4 TiB): its allocation fails, the routine returns
  // CANNL_STATUS_OUT_OF_MEMORY before touching it, and the run throws. The reads go to rows the
  // input names: with plain copies Clang forwarded x to out and dropped the allocation (C lets a
  // compiler drop an allocation it proves unneeded), and the routine ran without any scratch.
  using namespace ir;
  auto x = make_node("x", DType::F32, {2});
  auto big = make_node("big", DType::F32, {std::int64_t{1} << 40});
  auto out = make_node("out", DType::F32, {2});
  const Symbol i = fresh_symbol(), j = fresh_symbol();
  const AxisIndex at_i = AxisIndex::iterator(i), at_j = AxisIndex::iterator(j);
  auto body = seq({for_loop(i, 0, 2, set(big, {at_i}, get(x, {at_i}))),
                   for_loop(j, 0, 2, set(out, {at_j}, get_dynamic(big, {AxisIndex::fixed(0)}, 0, get(x, {at_j}))))});
  const backends::CompileRequest request{LoweredRoutine{"huge_scratch", body, {}}, {x, out}};
  const std::vector<test_util::Bytes> inputs{test_util::bytes_of(std::vector<float>{1, 0})};
  try {
    test_util::run_on(*backends::make_cc_backend(), request, inputs);
    FAIL() << "expected ResourceError";
  } catch (const ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("huge_scratch could not allocate its scratch memory"), std::string::npos)
        << e.what();
  }
#endif
}

}  // namespace
}  // namespace cannl
