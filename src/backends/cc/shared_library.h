#pragma once
// A dlopen'ed shared library, closed when the last Executable using it goes away.
//
//   auto lib = SharedLibrary::open("/abs/path/add-0123.so");   // CompileError on failure
//   auto fn = lib->symbol("cannl_entry_add");

#include <memory>
#include <string>

namespace cannl::backends::cc {

class SharedLibrary {
 public:
  /// dlopen(RTLD_NOW | RTLD_LOCAL); throws CompileError with dlerror()'s text, or naming the
  /// problem when the file is not a regular file or its ELF segments lie past its end (a
  /// truncated library, which dlopen would map and then crash on). With
  /// `keep_loaded` the library (and what it loaded) is never unmapped: an OpenMP runtime pulled in
  /// by the library keeps its pool threads alive after the last call, and unloading the runtime
  /// under them crashes the process.
  static std::shared_ptr<SharedLibrary> open(const std::string& path, bool keep_loaded = false);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  /// Address of `name`; throws CompileError when the library lacks it.
  void* symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  SharedLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
};

}  // namespace cannl::backends::cc
