// Atomic file replacement by temp file + rename (POSIX rename is atomic within a file system, so
// the temporary lives in the destination's directory). The name carries pid and a counter so
// concurrent writers of the same path never share a temporary.
#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "cannl/support/error.h"
#include "cannl/support/files.h"

namespace cannl::io {
namespace {

[[noreturn]] void throw_io(const std::string& what, const std::filesystem::path& path, int error) {
  throw IoError(what + " '" + path.string() + "': " + std::strerror(error));
}

/// Where the bytes go: a symbolic link keeps its link and its target is replaced (renaming over
/// the link itself would turn it into a regular file).
std::filesystem::path write_target(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_symlink(path, error)) return path;
  std::filesystem::path target = std::filesystem::canonical(path, error);
  if (!error) return target;
  target = std::filesystem::read_symlink(path, error);  // dangling: its first hop
  if (error) return path;
  return target.is_absolute() ? target : path.parent_path() / target;
}

/// The permission bits of the file the write replaces, if there is one: a checkpoint the user
/// made private (chmod 600) must not become world-readable by being saved again. Not the setuid,
/// setgid and sticky bits, which belonged to the old contents.
std::optional<mode_t> replaced_permissions(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  return info.st_mode & 0777;
}

/// fsync and close of the written temporary file; on failure it is removed and IoError thrown.
/// The data reaches the disk before the rename, always: otherwise a power loss after the rename
/// can leave the new name on an empty or partial file (the file systems do not order them).
void flush_and_close(int fd, const std::filesystem::path& temporary) {
  int error = ::fsync(fd) != 0 ? errno : 0;
  const char* what = "cannot flush";
  if (::close(fd) != 0 && error == 0) error = errno, what = "cannot close";
  if (error == 0) return;
  ::unlink(temporary.c_str());
  throw_io(what, temporary, error);
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path path)
    : path_(write_target(path)), temporary_(files::temporary_beside(path_)) {
  // Leftovers of an earlier writer of this file that was killed mid-write.
  files::remove_stale_temporaries(path_.parent_path().empty() ? "." : path_.parent_path(),
                                  path_.filename().string());
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_io("cannot create a temporary file for", path_, errno);
  // Before any byte is written, so the contents are never readable more widely than before.
  const std::optional<mode_t> mode = replaced_permissions(path_);
  if (mode && ::fchmod(fd_, *mode) != 0) {
    const int error = errno;
    ::close(fd_);
    ::unlink(temporary_.c_str());  // the destructor does not run for a throwing constructor
    throw_io("cannot give the temporary file the permissions of", path_, error);
  }
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
  const int fd = std::exchange(fd_, -1);
  flush_and_close(fd, temporary_);
  // Opened before the rename: a directory that cannot be opened fails with the old file in place.
  std::optional<files::OpenDirectory> directory;
  try {
    if (sync_to_disk) directory.emplace(path_.parent_path());
  } catch (const IoError&) {
    ::unlink(temporary_.c_str());
    throw;
  }
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
    int error = errno;
    ::unlink(temporary_.c_str());
    throw_io("cannot rename the temporary file over", path_, error);
  }
  if (!directory) return;
  try {
    directory->sync();
  } catch (const IoError& e) {
    throw IoError(std::string(e.what()) + ": '" + path_.string() +
                  "' holds the new contents, but they may not survive a power loss");
  }
}

}  // namespace cannl::io
