// Build/log directories of the running executable and crash-safe file writes. Generated sources
// and cached objects are written with write_atomically so a concurrent reader or a crash never
// sees a half-written file.
#include "cannl/support/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

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

/// A name no other thread or process uses at the same time: pid + per-process counter.
std::filesystem::path temporary_beside(const std::filesystem::path& path) {
  static std::atomic<unsigned long long> counter{0};
  std::ostringstream name;
  name << '.' << path.filename().string() << ".tmp." << ::getpid() << '.' << counter.fetch_add(1);
  return path.parent_path() / name.str();
}

/// Writes all of `contents` to `fd`, retrying short writes and EINTR. Returns 0 or an errno.
int write_all(int fd, std::string_view contents) {
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
  return 0;
}

}  // namespace

std::string executable_name() {
  std::string prefix = config::get("build_files_prefix");
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
  std::filesystem::path temporary = temporary_beside(path);
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw_io("cannot write", path, errno);
  int error = write_all(fd, contents);
  if (error == 0 && sync_to_disk && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temporary.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    throw_io("cannot write", path, error);
  }
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_io("cannot read", path, errno);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) throw_io("cannot read", path, errno);
  return contents.str();
}

}  // namespace cannl::files
