// Files: executable name and its directories, atomic writes and their failures, reading.
#include "cannl/support/files.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "support/config_test_fixture.h"
#include "support/file_permissions.h"

namespace cannl {
namespace {

using FilesTest = testing::ConfigEnvironment;

template <typename Body>
std::string io_error_message(Body body) {
  try {
    body();
  } catch (const IoError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected IoError";
  return "";
}

TEST_F(FilesTest, ExecutableNameIsTheTestBinary) {
  EXPECT_EQ(files::executable_name(), "test_support");
  config::set_override("build_files_prefix", "my_run");
  EXPECT_EQ(files::executable_name(), "my_run");
}

TEST_F(FilesTest, BuildFilesPrefixIsOneFolderName) {
  for (const char* bad : {"../escape", "a/b", "..", "."}) {
    config::set_override("build_files_prefix", bad);
    EXPECT_THROW(files::executable_name(), ConfigError) << bad;
  }
  config::set_override("build_files_prefix", "it's $(fine)");
  EXPECT_EQ(files::executable_name(), "it's $(fine)");
}

TEST_F(FilesTest, BuildAndLogDirectoriesAreCreatedUnderTheWorkingDirectory) {
  config::set_override("build_files_prefix", "demo");
  auto build = files::build_dir();
  auto logs = files::log_dir();
  EXPECT_EQ(build, std::filesystem::current_path() / "build_files" / "demo");
  EXPECT_EQ(logs, std::filesystem::current_path() / "log_files" / "demo");
  EXPECT_TRUE(std::filesystem::is_directory(build));
  EXPECT_TRUE(std::filesystem::is_directory(logs));
  EXPECT_EQ(files::build_dir(), build) << "a second call reuses the directory";
}

TEST_F(FilesTest, WriteAtomicallyCreatesAndReplacesWithoutLeftovers) {
  auto path = temp_dir_ / "out.c";
  files::write_atomically(path, "int x;\n");
  EXPECT_EQ(files::read_file(path), "int x;\n");
  files::write_atomically(path, std::string("a\0b", 3), /*sync_to_disk=*/true);
  EXPECT_EQ(files::read_file(path), std::string("a\0b", 3));
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(temp_dir_)) {
    ++entries;
  }
  EXPECT_EQ(entries, 1) << "the temporary file must be renamed away";
}

using testing::permissions_of;

TEST_F(FilesTest, AReplacedCacheFileKeepsItsPermissionBits) {
  // A schedule cache entry or a build artifact the user made private stays private when it is
  // written again, with or without the flushes.
  const auto path = temp_dir_ / "mm.schedule";
  for (bool sync_to_disk : {false, true})
    for (mode_t mode : {0600u, 0640u, 0755u}) {
      SCOPED_TRACE(mode);
      files::write_atomically(path, "old");
      ASSERT_EQ(::chmod(path.c_str(), mode), 0);
      files::write_atomically(path, "new", sync_to_disk);
      EXPECT_EQ(files::read_file(path), "new");
      EXPECT_EQ(permissions_of(path), mode);
    }
}

/// Files of this process may grow to `bytes` at most while it lives: a write past it fails with
/// EFBIG (SIGXFSZ ignored), the way a full disk fails one, and as root too (permission bits do
/// not stop root).
class ScopedFileSizeLimit {
 public:
  explicit ScopedFileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old_limit_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = old_limit_;
    limit.rlim_cur = bytes;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  }
  ~ScopedFileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_limit_);
    ::signal(SIGXFSZ, old_handler_);
  }
  ScopedFileSizeLimit(const ScopedFileSizeLimit&) = delete;
  ScopedFileSizeLimit& operator=(const ScopedFileSizeLimit&) = delete;

 private:
  rlimit old_limit_{};
  void (*old_handler_)(int) = SIG_DFL;
};

TEST_F(FilesTest, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  const auto path = temp_dir_ / "add.c";
  files::write_atomically(path, "int old;\n");
  for (bool sync_to_disk : {false, true}) {
    std::string message;
    {
      ScopedFileSizeLimit limit(16);
      message = io_error_message([&] { files::write_atomically(path, std::string(4096, 'x'), sync_to_disk); });
    }
    EXPECT_NE(message.find("cannot write '" + path.string() + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("File too large"), std::string::npos) << message;
    EXPECT_EQ(files::read_file(path), "int old;\n");
    int entries = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(temp_dir_)) ++entries;
    EXPECT_EQ(entries, 1) << "the temporary file was removed";
  }
}

TEST_F(FilesTest, WriteIntoMissingDirectoryThrowsIoErrorNamingPath) {
  auto path = temp_dir_ / "missing" / "out.c";
  std::string message = io_error_message([&] { files::write_atomically(path, "x"); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
}

TEST_F(FilesTest, RenameFailureRemovesTheTemporaryFile) {
  // Renaming a file over a non-empty directory fails after the temporary file was written.
  auto target = temp_dir_ / "occupied";
  std::filesystem::create_directories(target / "child");
  std::string message = io_error_message([&] { files::write_atomically(target, "data"); });
  EXPECT_NE(message.find(target.string()), std::string::npos) << message;
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(temp_dir_)) {
    ++entries;
  }
  EXPECT_EQ(entries, 1) << "only the directory remains; the temporary file was removed";
}

TEST_F(FilesTest, ReadMissingFileThrowsIoErrorNamingPath) {
  auto path = temp_dir_ / "absent.txt";
  std::string message = io_error_message([&] { files::read_file(path); });
  EXPECT_NE(message.find("cannot read '" + path.string() + "'"), std::string::npos) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
}

TEST_F(FilesTest, SyncDirectoryReportsFailuresNamingTheDirectory) {
  files::sync_directory(temp_dir_);
  files::sync_directory("");  // the working directory
  const auto missing = temp_dir_ / "missing";
  std::string message = io_error_message([&] { files::sync_directory(missing); });
  EXPECT_NE(message.find("cannot open directory to flush it '" + missing.string() + "'"),
            std::string::npos) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
  const auto file = temp_dir_ / "plain.txt";
  files::write_atomically(file, "x");
  message = io_error_message([&] { files::sync_directory(file); });
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_NE(message.find("Not a directory"), std::string::npos) << message;
}

// The pid of a process that has exited (and been reaped).
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST_F(FilesTest, TemporaryNamesCarryThePidOfTheWriter) {
  const auto name = files::temporary_beside(temp_dir_ / "add.so").filename().string();
  EXPECT_EQ(name.rfind(".add.so.tmp." + std::to_string(::getpid()) + ".", 0), 0u) << name;
}

TEST_F(FilesTest, StaleTemporariesOfDeadWritersAreRemoved) {
  const std::string dead = std::to_string(dead_pid()), alive = std::to_string(::getpid());
  const std::vector<std::string> stale{".add.so.tmp." + dead + ".0", ".add.so.tmp." + dead + ".3.log"};
  const std::vector<std::string> kept{".add.so.tmp." + alive + ".1", ".add.so.tmp.x.1", "add.so",
                                      ".notes.tmp", "add.so.tmp." + dead + ".2"};
  for (const auto& name : stale) files::write_atomically(temp_dir_ / name, "x");
  for (const auto& name : kept) files::write_atomically(temp_dir_ / name, "x");
  EXPECT_EQ(files::remove_stale_temporaries(temp_dir_), 2);
  for (const auto& name : stale) EXPECT_FALSE(std::filesystem::exists(temp_dir_ / name)) << name;
  for (const auto& name : kept) EXPECT_TRUE(std::filesystem::exists(temp_dir_ / name)) << name;
  EXPECT_EQ(files::remove_stale_temporaries(temp_dir_ / "missing"), 0) << "errors are ignored";
}

TEST_F(FilesTest, StaleTemporariesOfOneFileOnly) {
  const std::string dead = std::to_string(dead_pid());
  files::write_atomically(temp_dir_ / (".a.bin.tmp." + dead + ".0"), "x");
  files::write_atomically(temp_dir_ / (".b.bin.tmp." + dead + ".0"), "x");
  EXPECT_EQ(files::remove_stale_temporaries(temp_dir_, "a.bin"), 1);
  EXPECT_TRUE(std::filesystem::exists(temp_dir_ / (".b.bin.tmp." + dead + ".0")));
}

TEST_F(FilesTest, ReadingAFifoIsAnErrorNotAHang) {
  const auto fifo = temp_dir_ / "weights.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string message = io_error_message([&] { files::read_file(fifo); });
  EXPECT_NE(message.find("not a regular file"), std::string::npos) << message;
  EXPECT_FALSE(files::is_regular_file(fifo));
  EXPECT_FALSE(files::is_regular_file(temp_dir_));
  files::write_atomically(temp_dir_ / "f", "x");
  EXPECT_TRUE(files::is_regular_file(temp_dir_ / "f"));
}

}  // namespace
}  // namespace cannl
