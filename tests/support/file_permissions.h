#pragma once
// The permission bits of a file, for the tests of the writers that must keep them.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

namespace cannl::testing {

inline mode_t permissions_of(const std::filesystem::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

}  // namespace cannl::testing
