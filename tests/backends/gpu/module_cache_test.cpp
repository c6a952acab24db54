// The GPU module cache without a GPU: entries are stored and read back, keyed by their text, and
// a damaged entry is quarantined and reads as missing.
#include "backends/gpu/module_cache.h"

#include <gtest/gtest.h>

#include <fstream>

#include "cannl/support/files.h"

namespace cannl::backends::gpu {
namespace {

namespace fs = std::filesystem;

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::absolute(files::build_dir() / "gpu_module_cache_unit" / name);
  fs::remove_all(dir);
  return dir;
}

TEST(ModuleCache, StoresAndReadsBackByKey) {
  const fs::path dir = fresh("round_trip");
  const auto entry = module_cache_entry(dir, "add k0/x", "clbin", "source\ntag");
  EXPECT_EQ(entry.file.parent_path(), dir);
  EXPECT_EQ(entry.file.filename().string().rfind("add_k0_x-", 0), 0u) << entry.file;
  EXPECT_EQ(entry.file.extension(), ".clbin");
  EXPECT_FALSE(read_cached_module(entry));
  const std::string code("\x7f" "ELF\0binary", 10);
  store_cached_module(entry, code);
  EXPECT_EQ(read_cached_module(entry), code);
  const auto other = module_cache_entry(dir, "add k0/x", "clbin", "source\nanother tag");
  EXPECT_NE(other.file, entry.file);
  EXPECT_FALSE(read_cached_module(other));
}

TEST(ModuleCache, ADamagedEntryIsQuarantinedAndReadsAsMissing) {
  const fs::path dir = fresh("damaged");
  const auto entry = module_cache_entry(dir, "k", "cubin", "text");
  store_cached_module(entry, "compiled code");
  std::ofstream(entry.file, std::ios::binary | std::ios::trunc) << "compiled";  // truncated
  EXPECT_FALSE(read_cached_module(entry));
  EXPECT_FALSE(fs::exists(entry.file));
  EXPECT_TRUE(fs::exists(dir / "quarantine" / entry.file.filename()));
  store_cached_module(entry, "compiled code");
  EXPECT_EQ(read_cached_module(entry), "compiled code");
  discard_cached_module(entry, "the driver refused it");
  EXPECT_FALSE(read_cached_module(entry));
}

TEST(ModuleCache, AnEmptyFolderNameTurnsTheCacheOff) {
  const auto entry = module_cache_entry("", "k", "cubin", "text");
  EXPECT_TRUE(entry.file.empty());
  store_cached_module(entry, "code");
  EXPECT_FALSE(read_cached_module(entry));
}

}  // namespace
}  // namespace cannl::backends::gpu
