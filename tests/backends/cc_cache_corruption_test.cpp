// A damaged compile cache: a truncated, foreign or unrecorded library is never loaded (dlopen of
// a truncated library dies with SIGBUS); it is moved to cache/quarantine/ with one warning and
// rebuilt, and the routine still computes the right values.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <set>

#include "backends/cc/cache_entry.h"
#include "backends/cc/shared_library.h"
#include "backends/routines.h"
#include "backends/run_util.h"
#include "cannl/backends/cc_backend.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/hash.h"

namespace cannl {
namespace {

namespace fs = std::filesystem;

// c = a + b over 4 floats, with a comment no earlier run can have cached.
backends::CompileRequest unique_add(const std::string& name) {
  std::random_device rd;
  const std::string nonce = std::to_string(getpid()) + "-" +
                            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
                            "-" + std::to_string(rd());
  auto r = test_routines::pointwise_add(4, name);
  auto& loop = std::get<ir::For>(r.routine.body->node);
  auto set = std::get<ir::Set>(loop.body->node);
  r.routine.body = ir::for_loop(loop.index, loop.begin, loop.end,
                                ir::set(set.node, set.index, set.value, "nonce " + nonce));
  return r;
}

fs::path cache_dir() { return files::build_dir() / "cache"; }

std::set<fs::path> libraries() {
  std::set<fs::path> out;
  std::error_code error;
  for (const auto& e : fs::directory_iterator(cache_dir(), error))
    if (e.path().extension() == ".so") out.insert(e.path());
  return out;
}

// Compiles `request` (the first time) and returns the path of the library it created: the new
// one named after the routine (tests running in parallel add libraries of their own meanwhile).
fs::path compile_new(const backends::CompileRequest& request) {
  const auto before = libraries();
  test_util::cc()->compile(request);
  const std::string prefix = request.routine.name + "-";
  for (const auto& path : libraries())
    if (!before.count(path) && path.filename().string().rfind(prefix, 0) == 0) return path;
  ADD_FAILURE() << "no new library in " << cache_dir();
  return {};
}

std::vector<float> run_add(const backends::CompileRequest& request) {
  const std::vector<float> a{1, 2, 3, 4}, b{10, 20, 30, 40};
  std::vector<test_util::Bytes> inputs(2, test_util::Bytes(16));
  std::memcpy(inputs[0].data(), a.data(), 16);
  std::memcpy(inputs[1].data(), b.data(), 16);
  const auto out = test_util::run_on(*test_util::cc(), request, inputs);
  std::vector<float> c(4);
  std::memcpy(c.data(), out[2].data(), 16);
  return c;
}

// Damages the cached library of a fresh routine with `damage`, compiles the routine again and
// checks: one rebuild, one warning containing `problem`, the copy in quarantine/, right values.
void expect_rebuilt_after(const std::string& name, const std::function<void(const fs::path&)>& damage,
                          const std::string& problem) {
  const auto request = unique_add(name);
  const fs::path library = compile_new(request);
  ASSERT_FALSE(library.empty());
  damage(library);
  const int before = backends::cc::compiler_invocations();
  ::testing::internal::CaptureStderr();
  const auto values = run_add(request);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(backends::cc::compiler_invocations(), before + 1);
  EXPECT_EQ(values, (std::vector<float>{11, 22, 33, 44}));
  EXPECT_NE(err.find("was not loaded"), std::string::npos) << err;
  EXPECT_NE(err.find(problem), std::string::npos) << err;
  EXPECT_EQ(err.find("warning", err.find("warning") + 1), std::string::npos) << "one warning: " << err;
  EXPECT_TRUE(fs::exists(cache_dir() / "quarantine" / library.filename()));
  EXPECT_EQ(backends::cc::check_cache_entry(library, "").state, backends::cc::EntryState::Damaged)
      << "the rebuilt entry is recorded for its own key only";
  // The rebuilt entry is trusted again: no compiler, no warning.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_add(request), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(backends::cc::compiler_invocations(), before + 1);
}

TEST(CcCacheCorruption, TruncatedLibraryIsRebuilt) {
  expect_rebuilt_after("trunc_add", [](const fs::path& lib) { fs::resize_file(lib, fs::file_size(lib) / 2); },
                       "truncated");
}

TEST(CcCacheCorruption, EmptyLibraryIsRebuilt) {
  expect_rebuilt_after("empty_add", [](const fs::path& lib) { fs::resize_file(lib, 0); }, "truncated");
}

TEST(CcCacheCorruption, ForeignLibraryOfTheSameNameIsRebuilt) {
  // Another routine's (valid, loadable) library under this entry's name.
  const fs::path other = compile_new(unique_add("other_add"));
  expect_rebuilt_after("foreign_add", [&](const fs::path& lib) {
    fs::copy_file(other, lib, fs::copy_options::overwrite_existing);
  }, "differ from the SHA-256");
}

TEST(CcCacheCorruption, LibraryWithoutRecordIsRebuilt) {
  expect_rebuilt_after("unrecorded_add",
                       [](const fs::path& lib) { fs::remove(backends::cc::cache_record_path(lib)); },
                       "no record");
}

TEST(CcCacheCorruption, RecordOfAnotherKeyIsRebuilt) {
  expect_rebuilt_after("rekeyed_add", [](const fs::path& lib) {
    const fs::path record = backends::cc::cache_record_path(lib);
    std::string text = files::read_file(record);
    text.replace(text.find("key ") + 4, 4, "ffff");
    files::write_atomically(record, text);
  }, "another source");
}

TEST(CcCacheCorruption, GarbageRecordIsRebuilt) {
  expect_rebuilt_after("garbage_add", [](const fs::path& lib) {
    files::write_atomically(backends::cc::cache_record_path(lib), "not a record\n");
  }, "not readable");
}

TEST(CcCacheCorruption, CacheRecordMatchesTheLibrary) {
  const auto request = unique_add("recorded_add");
  const fs::path library = compile_new(request);
  const std::string record = files::read_file(backends::cc::cache_record_path(library));
  EXPECT_EQ(record.rfind("cannl compile cache entry 1\nkey ", 0), 0u) << record;
  EXPECT_NE(record.find("size " + std::to_string(fs::file_size(library)) + "\n"), std::string::npos) << record;
  EXPECT_NE(record.find("sha256 " + sha256_hex(files::read_file(library))), std::string::npos) << record;
}

TEST(CcCacheCorruption, TemporariesOfKilledCompilesAreRemoved) {
  // A cache directory this process has not prepared yet, holding a dead compile's leftovers.
  const fs::path dir = files::build_dir() / "prepare_test" / "cache";
  fs::remove_all(dir.parent_path());
  fs::create_directories(dir);
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  const std::string dead = std::to_string(child);
  const fs::path library_temp = dir / (".add-0123.so.tmp." + dead + ".0");
  const fs::path log_temp = dir / (".add-0123.so.tmp." + dead + ".0.log");
  const fs::path source_temp = dir.parent_path() / (".add.c.tmp." + dead + ".1");
  const fs::path live = dir / (".add-0123.so.tmp." + std::to_string(::getpid()) + ".7");
  for (const auto& path : {library_temp, log_temp, source_temp, live}) files::write_atomically(path, "x");
  backends::cc::prepare_cache_directory(dir);
  EXPECT_FALSE(fs::exists(library_temp));
  EXPECT_FALSE(fs::exists(log_temp));
  EXPECT_FALSE(fs::exists(source_temp));
  EXPECT_TRUE(fs::exists(live)) << "a running compile's file is left alone";
  fs::remove_all(dir.parent_path());
}

// The last line of defence, without the cache: a truncated library gives an error, not SIGBUS.
TEST(SharedLibraryOpen, TruncatedLibraryIsAnErrorNotACrash) {
  const fs::path library = compile_new(unique_add("direct_add"));
  const fs::path copy = files::build_dir() / "truncated_copy.so";
  for (std::uintmax_t keep : {std::uintmax_t{0}, std::uintmax_t{40}, std::uintmax_t{200}, fs::file_size(library) / 2}) {
    fs::copy_file(library, copy, fs::copy_options::overwrite_existing);
    fs::resize_file(copy, keep);
    try {
      backends::cc::SharedLibrary::open(copy.string());
      ADD_FAILURE() << "a library truncated to " << keep << " bytes was loaded";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find(copy.string()), std::string::npos) << e.what();
    }
  }
  fs::remove(copy);
}

TEST(SharedLibraryOpen, FifoIsAnErrorNotAHang) {
  const fs::path fifo = files::build_dir() / "fifo_library.so";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    backends::cc::SharedLibrary::open(fifo.string());
    ADD_FAILURE() << "a FIFO was loaded";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  fs::remove(fifo);
}

}  // namespace
}  // namespace cannl
