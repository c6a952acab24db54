// The per-user cache of program-independent libraries (the matmul kernel library): a fresh build
// folder takes a verified copy instead of compiling, a damaged copy is never taken, and
// cc_kernel_cache_dir=none keeps every build folder on its own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backends/cc/compile_cache.h"
#include "backends/run_util.h"
#include "cannl/backends/cc_backend.h"
#include "cannl/support/config.h"
#include "cannl/support/files.h"

namespace cannl {
namespace {

namespace fs = std::filesystem;

std::string make_nonce() {
  std::random_device rd;
  return std::to_string(getpid()) + "_" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "_" + std::to_string(rd());
}

// A library text no earlier run can have cached.
std::string library_text(const std::string& nonce) {
  return "/* " + nonce + " */\nint cannl_shared_probe(void) { return 42; }\n";
}

int call_probe(const backends::cc::SharedLibrary& library) {
  return reinterpret_cast<int (*)()>(library.symbol("cannl_shared_probe"))();
}

// Each test its own shared directory and fresh build folders (build_files/<prefix>/).
struct SharedCacheTest : ::testing::Test {
  test_util::ConfigGuard guard;
  std::string nonce = make_nonce();
  fs::path shared = fs::temp_directory_path() / ("cannl_shared_kernels_" + nonce);
  std::vector<fs::path> folders;

  void SetUp() override { config::set_override("cc_kernel_cache_dir", shared.string()); }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(shared, ignored);
    for (const auto& f : folders) fs::remove_all(f, ignored);
  }
  // Switches to an empty build folder.
  void fresh_build_folder() {
    config::set_override("build_files_prefix", "shared_cache_test_" + nonce + "_" + std::to_string(folders.size()));
    folders.push_back(files::build_dir());
  }
  std::shared_ptr<backends::cc::SharedLibrary> load() {
    return backends::cc::load_or_compile("shared_probe", library_text(nonce), {}, /*shared=*/true);
  }
  fs::path shared_entry() const {
    for (const auto& e : fs::directory_iterator(shared))
      if (e.path().extension() == ".so") return e.path();
    return {};
  }
};

TEST_F(SharedCacheTest, FreshBuildFolderCopiesInsteadOfCompiling) {
  fresh_build_folder();
  const int before = backends::cc::compiler_invocations();
  EXPECT_EQ(call_probe(*load()), 42);
  EXPECT_EQ(backends::cc::compiler_invocations(), before + 1);
  ASSERT_FALSE(shared_entry().empty()) << "the compiled library is copied to the shared cache";

  fresh_build_folder();
  const auto copied = load();
  EXPECT_EQ(backends::cc::compiler_invocations(), before + 1) << "taken from the shared cache";
  EXPECT_EQ(call_probe(*copied), 42);
  EXPECT_EQ(fs::path(copied->path()).parent_path(), fs::absolute(files::build_dir() / "cache"))
      << "the copy is an entry of the build folder's own cache";
}

TEST_F(SharedCacheTest, DamagedSharedEntryIsRecompiledAndReplaced) {
  fresh_build_folder();
  load();
  const fs::path entry = shared_entry();
  ASSERT_FALSE(entry.empty());
  {
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(64);
    f.put('\x7f');
    f.put('\x00');
  }
  fresh_build_folder();
  const int before = backends::cc::compiler_invocations();
  EXPECT_EQ(call_probe(*load()), 42);
  EXPECT_EQ(backends::cc::compiler_invocations(), before + 1) << "a damaged shared copy is not taken";

  fresh_build_folder();
  load();
  EXPECT_EQ(backends::cc::compiler_invocations(), before + 1) << "the rebuilt library replaced the damaged copy";
}

TEST_F(SharedCacheTest, NoneKeepsBuildFoldersApart) {
  config::set_override("cc_kernel_cache_dir", "none");
  fresh_build_folder();
  const int before = backends::cc::compiler_invocations();
  load();
  fresh_build_folder();
  load();
  EXPECT_EQ(backends::cc::compiler_invocations(), before + 2);
  EXPECT_FALSE(fs::exists(shared));
}

TEST_F(SharedCacheTest, RoutinesStayInTheirBuildFolder) {
  fresh_build_folder();
  backends::cc::load_or_compile("shared_probe", library_text(nonce));  // not shared
  EXPECT_FALSE(fs::exists(shared) && !shared_entry().empty());
}

}  // namespace
}  // namespace cannl
