// dlopen wrapper (see shared_library.h).
#include "backends/cc/shared_library.h"

#include <dlfcn.h>

#include "cannl/support/error.h"

namespace cannl::backends::cc {

std::shared_ptr<SharedLibrary> SharedLibrary::open(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
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
