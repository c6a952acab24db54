#pragma once
// A dlopen'ed shared library, closed when the last Executable using it goes away: a routine the
// cc backend compiled, or a system library a backend loads at run time (a GPU driver).
//
//   auto lib = SharedLibrary::open("/abs/path/add-0123.so");   // CompileError on failure
//   auto fn = lib->symbol("cannl_entry_add");
//   auto cl = SharedLibrary::open_system({"libOpenCL.so.1"}, "OpenCL");  // BackendUnavailable

#include <memory>
#include <string>
#include <vector>

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
  /// The first of `candidates` (sonames searched the usual way, or paths) that dlopen
  /// (RTLD_NOW | RTLD_LOCAL) loads, never unloaded: driver libraries start threads and register
  /// exit handlers that must outlive every use. Throws BackendUnavailable saying `what` is not
  /// available and naming every candidate tried with dlerror()'s reason for it.
  ///   open_system({"libcuda.so.1"}, "the CUDA driver")
  static std::shared_ptr<SharedLibrary> open_system(const std::vector<std::string>& candidates,
                                                    const std::string& what);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  /// Address of `name`; throws CompileError when the library lacks it.
  void* symbol(const std::string& name) const;
  /// Address of `name`, or nullptr when the library lacks it (an optional entry point).
  void* find_symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  SharedLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
};

}  // namespace cannl::backends::cc
