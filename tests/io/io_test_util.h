#pragma once
// Helpers shared by the io tests: a fresh scratch directory per test, raw file access and
// error assertions (type and message substring).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

namespace cannl::io::testing_util {

/// test_work/io/scratch/<suite>.<test>/, emptied first.
inline std::filesystem::path scratch_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = std::filesystem::current_path() / "scratch" /
                              (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void spit(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// Runs `f` and checks it throws E whose message contains every one of `substrings`.
template <typename E>
void expect_error(const std::function<void()>& f, std::initializer_list<std::string> substrings) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << *substrings.begin() << "'";
  } catch (const E& e) {
    for (const std::string& s : substrings)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << "missing '" << s << "' in: " << e.what();
  }
}

}  // namespace cannl::io::testing_util
