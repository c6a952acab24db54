// Read-only file mappings (POSIX mmap). The descriptor is closed right after mapping: the mapping
// keeps the file alive. A file truncated by another process while mapped would fault on access;
// checkpoints are replaced by rename, never truncated in place, so cannl's own writes cannot.
#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "cannl/support/error.h"

namespace cannl::io {
namespace {

[[noreturn]] void throw_io(const std::string& what, const std::filesystem::path& path, int error) {
  throw IoError(what + " '" + path.string() + "': " + std::strerror(error));
}

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever (it is then rejected as
  // not a regular file); for regular files the flag changes nothing.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw_io("cannot open", path, errno);
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    int error = errno;
    ::close(fd);
    throw_io("cannot stat", path, error);
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(fd);
    throw IoError("'" + path.string() + "' is not a regular file");
  }
  size_ = static_cast<std::size_t>(status.st_size);
  if (size_ > 0) {
    void* mapping = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      int error = errno;
      ::close(fd);
      throw_io("cannot map", path, error);
    }
    data_ = static_cast<const std::byte*>(mapping);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace cannl::io
