// Build/log directories of the running executable and crash-safe file writes. Generated sources
// and cached objects are written with write_atomically (an AtomicFile, atomic_file.cpp) so a
// concurrent reader or a crash never sees a half-written file.
#include "cannl/support/files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <optional>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cannl/support/atomic_file.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::files {
namespace {

[[noreturn]] void throw_io(const std::string& what, const std::filesystem::path& path, int error) {
  throw IoError(what + " '" + path.string() + "': " + std::strerror(error));
}

std::filesystem::path ensure_directory(const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    throw IoError("cannot create directory '" + dir.string() + "': " + error.message());
  }
  return dir;
}

std::filesystem::path working_directory() {
  std::error_code error;
  std::filesystem::path cwd = std::filesystem::current_path(error);
  if (error) throw IoError("cannot determine the working directory: " + error.message());
  return cwd;
}

constexpr std::string_view kTemporaryMark = ".tmp.";

/// The writer's pid in a name made by temporary_beside (".<name>.tmp.<pid>.<n>[suffix]").
std::optional<long> temporary_owner(const std::string& name) {
  if (name.empty() || name[0] != '.') return std::nullopt;
  const std::size_t mark = name.rfind(kTemporaryMark);
  if (mark == std::string::npos) return std::nullopt;
  const char* begin = name.data() + mark + kTemporaryMark.size();
  const char* end = name.data() + name.size();
  long pid = 0;
  const auto [after_pid, error] = std::from_chars(begin, end, pid);
  if (error != std::errc() || after_pid == begin || after_pid == end || *after_pid != '.' || pid <= 0)
    return std::nullopt;
  unsigned long long counter = 0;
  const auto [after_counter, error2] = std::from_chars(after_pid + 1, end, counter);
  if (error2 != std::errc() || after_counter == after_pid + 1) return std::nullopt;
  return pid;
}

bool process_exists(long pid) {
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

}  // namespace

std::filesystem::path temporary_beside(const std::filesystem::path& path) {
  static std::atomic<unsigned long long> counter{0};
  std::ostringstream name;
  name << '.' << path.filename().string() << kTemporaryMark << ::getpid() << '.'
       << counter.fetch_add(1);
  return path.parent_path() / name.str();
}

int remove_stale_temporaries(const std::filesystem::path& dir, std::string_view for_name) {
  const std::string own_prefix = "." + std::string(for_name) + std::string(kTemporaryMark);
  const auto max_age = std::chrono::hours(24);
  const auto now = std::filesystem::file_time_type::clock::now();
  std::error_code error;
  std::filesystem::directory_iterator it(dir, error), end;
  int removed = 0;
  for (; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (!for_name.empty() && name.rfind(own_prefix, 0) != 0) continue;
    const auto pid = temporary_owner(name);
    if (!pid || !it->is_regular_file(error)) continue;
    const auto modified = it->last_write_time(error);
    const bool old = !error && now - modified > max_age;
    if ((old || !process_exists(*pid)) && std::filesystem::remove(it->path(), error)) ++removed;
    error.clear();
  }
  return removed;
}

void sync_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_io("cannot open", path, errno);
  const int error = ::fsync(fd) != 0 ? errno : 0;
  ::close(fd);
  if (error != 0) throw_io("cannot flush", path, error);
}

OpenDirectory::OpenDirectory(const std::filesystem::path& dir) : dir_(dir.empty() ? "." : dir) {
  fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw_io("cannot open directory to flush it", dir_, errno);
}

OpenDirectory::~OpenDirectory() {
  if (fd_ >= 0) ::close(fd_);
}

void OpenDirectory::sync() {
  // EINVAL: the file system does not flush directories (some FUSE and network file systems);
  // its renames are as durable as it makes them, and there is nothing else to ask it.
  if (::fsync(fd_) != 0 && errno != EINVAL) throw_io("cannot flush directory", dir_, errno);
}

void sync_directory(const std::filesystem::path& dir) { OpenDirectory(dir).sync(); }

bool is_regular_file(const std::filesystem::path& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string executable_name() {
  std::string prefix = config::get("build_files_prefix");
  // One folder name: a '/' or ".." would place build files anywhere on the disk.
  if (prefix.find('/') != std::string::npos || prefix == "." || prefix == "..")
    throw ConfigError("config key 'build_files_prefix' = '" + prefix + "' (from " +
                      config::source_of("build_files_prefix") +
                      "): expected a folder name without '/' (it is used under build_files/)");
  if (!prefix.empty()) return prefix;
  std::error_code error;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error || exe.filename().empty()) return "cannl";  // no /proc (sandbox): still usable
  return exe.filename().string();
}

std::filesystem::path build_dir() {
  return ensure_directory(working_directory() / "build_files" / executable_name());
}

std::filesystem::path log_dir() {
  return ensure_directory(working_directory() / "log_files" / executable_name());
}

void write_atomically(const std::filesystem::path& path, std::string_view contents,
                      bool sync_to_disk) {
  AtomicFile out(path);
  out.write(contents);
  out.commit(sync_to_disk ? Durability::survives_power_loss : Durability::unflushed);
}

std::string read_file(const std::filesystem::path& path) {
  // A FIFO or a device would block or never end: only regular files are read.
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
    throw IoError("cannot read '" + path.string() + "': not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_io("cannot read", path, errno);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) throw_io("cannot read", path, errno);
  return contents.str();
}

}  // namespace cannl::files
