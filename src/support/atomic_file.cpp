// Atomic file replacement by temporary file + rename (see atomic_file.h). POSIX rename is atomic
// within a file system, so the temporary lives in the destination's directory; its name carries
// the pid and a counter (files::temporary_beside), so concurrent writers of one path never share
// a temporary.
#include "cannl/support/atomic_file.h"

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

namespace cannl::files {
namespace {

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

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

/// The permission bits of the file the write replaces, if there is one: a checkpoint or a cache
/// the user made private (chmod 600) must not become world-readable by being written again. Not
/// the setuid, setgid and sticky bits, which belonged to the old contents.
std::optional<mode_t> replaced_permissions(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  return info.st_mode & 0777;
}

}  // namespace

AtomicFile::AtomicFile(const std::filesystem::path& path)
    : path_(write_target(path)), temporary_(temporary_beside(path_)) {
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError("cannot create a temporary file for " + quoted(path_) + ": " + std::strerror(errno));
  // Before any byte is written, so the contents are never readable more widely than before.
  const std::optional<mode_t> mode = replaced_permissions(path_);
  if (mode && ::fchmod(fd_, *mode) != 0)
    abandon("cannot give the temporary file the permissions of", path_, errno);
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(temporary_.c_str());
}

void AtomicFile::abandon(const std::string& what, const std::filesystem::path& about, int error) {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  ::unlink(temporary_.c_str());
  committed_ = true;  // nothing left for the destructor (which does not run for a constructor)
  throw IoError(what + " " + quoted(about) + ": " + std::strerror(error));
}

void AtomicFile::write(std::string_view bytes) {
  if (fd_ < 0) throw IoError("write to " + quoted(path_) + " after it was committed or abandoned");
  const char* data = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t written = ::write(fd_, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      abandon("cannot write", path_, errno);
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
}

void AtomicFile::commit(Durability durability) {
  if (fd_ < 0) throw IoError(quoted(path_) + " was already committed or abandoned");
  // The data reaches the disk before the rename: otherwise a power loss after the rename can
  // leave the new name on an empty or partial file (file systems do not order the two).
  if (durability != Durability::unflushed && ::fsync(fd_) != 0) abandon("cannot flush", temporary_, errno);
  if (::close(std::exchange(fd_, -1)) != 0) abandon("cannot close", temporary_, errno);
  // Opened before the rename: a directory that cannot be opened fails with the old file in place.
  std::optional<OpenDirectory> directory;
  try {
    if (durability == Durability::survives_power_loss) directory.emplace(path_.parent_path());
  } catch (const IoError&) {
    ::unlink(temporary_.c_str());
    committed_ = true;
    throw;
  }
  if (::rename(temporary_.c_str(), path_.c_str()) != 0)
    abandon("cannot rename the temporary file over", path_, errno);
  committed_ = true;
  if (!directory) return;
  try {
    directory->sync();
  } catch (const IoError& e) {
    throw IoError(std::string(e.what()) + ": " + quoted(path_) +
                  " holds the new contents, but they may not survive a power loss");
  }
}

}  // namespace cannl::files
