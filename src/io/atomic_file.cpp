// Atomic file replacement by temp file + rename (POSIX rename is atomic within a file system, so
// the temporary lives in the destination's directory). The name carries pid and a counter so
// concurrent writers of the same path never share a temporary.
#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "cannl/support/error.h"

namespace cannl::io {
namespace {

[[noreturn]] void throw_io(const std::string& what, const std::filesystem::path& path, int error) {
  throw IoError(what + " '" + path.string() + "': " + std::strerror(error));
}

std::filesystem::path temporary_beside(const std::filesystem::path& path) {
  static std::atomic<unsigned long long> counter{0};
  std::string name = "." + path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                     std::to_string(counter.fetch_add(1));
  return path.parent_path() / name;
}

/// fsync of the directory makes the rename itself durable.
void sync_directory(const std::filesystem::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: some file systems refuse to open directories
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path path)
    : path_(std::move(path)), temporary_(temporary_beside(path_)) {
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_io("cannot create a temporary file for", path_, errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temporary_.c_str());
  }
}

void AtomicFile::write(std::string_view bytes) {
  if (fd_ < 0) throw IoError("write to '" + path_.string() + "' after it was committed");
  const char* data = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    ssize_t written = ::write(fd_, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw_io("cannot write", temporary_, errno);
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
}

void AtomicFile::commit(bool sync_to_disk) {
  if (fd_ < 0) throw IoError("'" + path_.string() + "' was already committed");
  if (sync_to_disk && ::fsync(fd_) != 0) throw_io("cannot flush", temporary_, errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    int error = errno;
    ::unlink(temporary_.c_str());
    throw_io("cannot close", temporary_, error);
  }
  fd_ = -1;
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
    int error = errno;
    ::unlink(temporary_.c_str());
    throw_io("cannot rename the temporary file over", path_, error);
  }
  if (sync_to_disk) sync_directory(path_.parent_path());
}

}  // namespace cannl::io
