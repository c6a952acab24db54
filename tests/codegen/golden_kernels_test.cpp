// Golden snapshot of the kernel library source as the cc backend compiles it, for 64-byte vectors
// (tests/golden/codegen/cannl_sgemm_x16.c): the configuration macros the C printer's blocking
// implies, then src/codegen/c/kernels/cannl_sgemm.c. A change to either shows up in review here;
// when intended, regenerate and review the diff:
//
//   CANNL_TEST_UPDATE_GOLDEN=1 ./test_codegen --gtest_filter='GoldenKernels.*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cannl/codegen/c_kernels.h"

namespace cannl {
namespace {

TEST(GoldenKernels, SgemmLibraryOf64ByteVectors) {
  const codegen::KernelLibrarySource got = codegen::sgemm_kernel_library(64);
  EXPECT_EQ(got.name, "cannl_sgemm_x16");
  const auto path = std::filesystem::path(CANNL_SOURCE_DIR) / "tests/golden/codegen" / (got.name + ".c");
  if (std::getenv("CANNL_TEST_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path) << got.text;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " is missing; run with CANNL_TEST_UPDATE_GOLDEN=1";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got.text, want.str()) << got.name << " changed; if intended, rerun with CANNL_TEST_UPDATE_GOLDEN=1";
}

TEST(GoldenKernels, EveryWidthNamesItsLanes) {
  EXPECT_EQ(codegen::sgemm_kernel_library(16).name, "cannl_sgemm_x4");
  EXPECT_NE(codegen::sgemm_kernel_library(16).text.find("#define CANNL_VECTOR_BYTES 16\n"), std::string::npos);
  EXPECT_EQ(codegen::sgemm_kernel_library(32).name, "cannl_sgemm_x8");
  EXPECT_NE(codegen::sgemm_kernel_library(32).text.find("#define CANNL_EDGE_KERNELS 0\n"), std::string::npos);
}

}  // namespace
}  // namespace cannl
