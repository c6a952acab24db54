#pragma once
// A test fixture that isolates configuration: a fresh temporary directory as the working
// directory, no CANNL_* environment variables, no overrides or flags. Everything is restored
// afterwards so tests do not leak into each other.
//
//   TEST_F(ConfigEnvironment, X) { write_file("cannl_config", "debug=1\n"); config::reload(); }

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cannl/support/config.h"

extern char** environ;

namespace cannl::testing {

class ConfigEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_cwd_ = std::filesystem::current_path();
    std::string pattern = (std::filesystem::temp_directory_path() / "cannl_config_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    temp_dir_ = pattern;
    std::filesystem::current_path(temp_dir_);
    for (char** entry = environ; *entry != nullptr; ++entry) {
      std::string variable(*entry);
      if (variable.rfind("CANNL_", 0) != 0) continue;
      std::size_t equals = variable.find('=');
      saved_env_.emplace_back(variable.substr(0, equals), variable.substr(equals + 1));
    }
    for (auto& [name, value] : saved_env_) ::unsetenv(name.c_str());
    reset_config();
  }

  void TearDown() override {
    std::filesystem::current_path(saved_cwd_);
    for (char** entry = environ; *entry != nullptr;) {
      std::string variable(*entry);
      if (variable.rfind("CANNL_", 0) == 0) {
        ::unsetenv(variable.substr(0, variable.find('=')).c_str());
        entry = environ;  // unsetenv edits the array: restart the scan
      } else {
        ++entry;
      }
    }
    for (auto& [name, value] : saved_env_) ::setenv(name.c_str(), value.c_str(), 1);
    std::error_code ignored;
    std::filesystem::remove_all(temp_dir_, ignored);
    reset_config();
  }

  static void reset_config() {
    config::clear_overrides();
    config::clear_command_line();
    config::reload();
  }

  /// Writes `contents` to `relative` under the temporary directory.
  void write_file(const std::filesystem::path& relative, const std::string& contents) {
    std::filesystem::create_directories((temp_dir_ / relative).parent_path());
    std::ofstream(temp_dir_ / relative) << contents;
  }

  std::filesystem::path temp_dir_;

 private:
  std::filesystem::path saved_cwd_;
  std::vector<std::pair<std::string, std::string>> saved_env_;
};

}  // namespace cannl::testing
