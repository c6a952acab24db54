// dlopen wrapper (see shared_library.h).
#include "backends/cc/shared_library.h"

#include <dlfcn.h>

#include <cstdlib>

#include "cannl/support/error.h"

namespace cannl::backends::cc {

namespace {
// libgomp's idle threads spin ~300k iterations at every barrier by default. When the cores are
// shared (ctest -j, CI, a busy laptop) a spinning team starves the thread it waits for (a
// training step many times slower; benchmarks/reports/schedule-decisions.md). A short spin keeps the quiet-machine latency of a
// persistent pool without that cliff. Read once by libgomp when it first loads, so set it before
// the first OpenMP library is opened; a user's own setting wins.
void bound_openmp_spinning() {
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr)
    setenv("GOMP_SPINCOUNT", "10000", /*overwrite=*/0);
}
}  // namespace

std::shared_ptr<SharedLibrary> SharedLibrary::open(const std::string& path, bool keep_loaded) {
  // keep_loaded is set exactly for libraries that link the OpenMP runtime.
  if (keep_loaded) bound_openmp_spinning();
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

}  // namespace cannl::backends::cc
