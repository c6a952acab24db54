// dlopen wrapper (see shared_library.h).
#include "backends/cc/shared_library.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cannl/backends/openmp_team.h"
#include "cannl/support/error.h"
#include "cannl/support/process.h"

namespace cannl::backends::cc {

namespace {
// libgomp's idle threads spin ~300k iterations at every barrier by default. When the cores are
// shared (ctest -j, CI, a busy laptop) a spinning team starves the thread it waits for (a
// training step many times slower; benchmarks/reports/schedule-decisions.md). A short spin keeps the quiet-machine latency of a
// persistent pool without that cliff. Read once by libgomp when it first loads, so set it before
// the first OpenMP library is opened; a user's own setting wins.
void bound_openmp_spinning() {
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr)
    process::set_environment_default("GOMP_SPINCOUNT", "10000");  // other threads may be spawning
}
[[noreturn]] void not_loadable(const std::string& path, const std::string& why) {
  throw CompileError("cannot load the compiled routine " + path + ": " + why +
                     "; delete the file to force a rebuild");
}

/// Reads exactly `size` bytes at `offset`; false on a short read.
bool read_at(int fd, void* out, std::size_t size, off_t offset) {
  auto* bytes = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t got = ::pread(fd, bytes, size, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    bytes += got;
    size -= static_cast<std::size_t>(got);
    offset += got;
  }
  return true;
}

/// Checks what dlopen would map: a regular file whose ELF segments lie inside it. dlopen maps a
/// truncated library without complaint and then faults (SIGBUS) on the first page past its end,
/// killing the process; this turns that into an error. Libraries of another ELF class are left
/// to dlopen, which rejects them with a message.
void check_mappable(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) not_loadable(path, std::strerror(errno));
  struct stat info {};
  ElfW(Ehdr) header{};
  const bool regular = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  const auto size = static_cast<std::uint64_t>(info.st_size);
  const bool has_header = regular && read_at(fd, &header, sizeof header, 0);
  std::vector<ElfW(Phdr)> segments;
  const bool native = has_header && std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 &&
                      header.e_ident[EI_CLASS] == (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32);
  bool table_inside = false;
  if (native && header.e_phentsize == sizeof(ElfW(Phdr))) {
    const std::uint64_t table_end = header.e_phoff + std::uint64_t{header.e_phnum} * sizeof(ElfW(Phdr));
    table_inside = header.e_phoff <= size && table_end <= size;
    segments.resize(header.e_phnum);
    if (table_inside && !segments.empty())
      table_inside = read_at(fd, segments.data(), segments.size() * sizeof(ElfW(Phdr)),
                             static_cast<off_t>(header.e_phoff));
  }
  ::close(fd);
  if (!regular) not_loadable(path, "not a regular file");
  if (!has_header || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    not_loadable(path, "not a shared library (no ELF header)");
  if (!native) return;
  if (!table_inside) not_loadable(path, "its program headers lie past its end (truncated?)");
  for (const auto& segment : segments)
    if (segment.p_offset > size || segment.p_filesz > size - segment.p_offset)
      not_loadable(path, "a segment lies past its end at " + std::to_string(size) +
                             " bytes (truncated?)");
}

}  // namespace

std::shared_ptr<SharedLibrary> SharedLibrary::open(const std::string& path, bool keep_loaded) {
  check_mappable(path);
  // keep_loaded is set exactly for libraries that link the OpenMP runtime, which reads its
  // environment when it first loads: its spinning bounded, its default team the one the schedule
  // cache's keys name (openmp_team.h).
  if (keep_loaded) {
    bound_openmp_spinning();
    pin_openmp_team();
  }
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | (keep_loaded ? RTLD_NODELETE : 0));
  if (handle == nullptr) {
    const char* why = dlerror();
    throw CompileError("cannot load the compiled routine " + path + ": " +
                       (why != nullptr ? why : "unknown dlopen error") +
                       "; delete the file to force a rebuild");
  }
  return std::shared_ptr<SharedLibrary>(new SharedLibrary(handle, path));
}

std::shared_ptr<SharedLibrary> SharedLibrary::open_system(const std::vector<std::string>& candidates,
                                                          const std::string& what) {
  std::string tried;
  for (const auto& name : candidates) {
    dlerror();
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle != nullptr) return std::shared_ptr<SharedLibrary>(new SharedLibrary(handle, name));
    const char* why = dlerror();
    tried += "\n  " + name + ": " + (why != nullptr ? why : "unknown dlopen error");
  }
  throw BackendUnavailable(what + " is not available: no library could be loaded; tried" +
                           (candidates.empty() ? std::string(" nothing") : tried));
}

SharedLibrary::~SharedLibrary() { dlclose(handle_); }

void* SharedLibrary::symbol(const std::string& name) const {
  dlerror();
  void* address = dlsym(handle_, name.c_str());
  if (address == nullptr) {
    const char* why = dlerror();
    throw CompileError("the compiled library " + path_ + " has no symbol " + name + ": " +
                       (why != nullptr ? why : "null address") + "; delete it to force a rebuild");
  }
  return address;
}

void* SharedLibrary::find_symbol(const std::string& name) const { return dlsym(handle_, name.c_str()); }

}  // namespace cannl::backends::cc
