#pragma once
// Golden-file comparison for generated sources (tests/golden/codegen/): the text must equal the
// committed file; with CANNL_TEST_UPDATE_GOLDEN set the file is rewritten instead (review the diff).

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace cannl::testing {

/// Small repeating values (k % 7 - 3) for golden inputs.
inline std::vector<double> ramp(std::int64_t n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = static_cast<double>(k % 7) - 3.0;
  return out;
}

/// Compares `got` with tests/golden/codegen/<file>, or rewrites it under CANNL_TEST_UPDATE_GOLDEN.
inline void expect_golden(const std::string& file, const std::string& got) {
  const auto path = std::filesystem::path(CANNL_SOURCE_DIR) / "tests/golden/codegen" / file;
  if (std::getenv("CANNL_TEST_UPDATE_GOLDEN") != nullptr) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << got;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " is missing; run with CANNL_TEST_UPDATE_GOLDEN=1";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << file << " changed; if intended, rerun with CANNL_TEST_UPDATE_GOLDEN=1";
}

}  // namespace cannl::testing
