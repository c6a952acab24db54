#pragma once
// A GPU API's library, loaded at run time, and its entry points bound by name. cannl includes no
// GPU header and links no GPU library: each API file declares the few types and functions it
// uses, and a machine without the library gets a BackendUnavailable naming it, never a link or
// load failure of cannl itself.
//
//   ApiLibrary lib({"libOpenCL.so.1"}, "OpenCL");          // BackendUnavailable when missing
//   lib.bind(clFinish, "clFinish");                         // BackendUnavailable when absent

#include <memory>
#include <string>
#include <vector>

#include "backends/cc/shared_library.h"

namespace cannl::backends::gpu {

class ApiLibrary {
 public:
  /// Loads the first of `candidates` that dlopen accepts (SharedLibrary::open_system); `what`
  /// names the API in messages ("the CUDA driver").
  ApiLibrary(const std::vector<std::string>& candidates, std::string what);

  /// Sets `entry` to the function `name`; throws BackendUnavailable naming the library and the
  /// function when the library lacks it (a driver older than cannl needs).
  template <class Function>
  void bind(Function*& entry, const char* name) const {
    entry = reinterpret_cast<Function*>(require(name));
  }
  /// Sets `entry` to the function `name`, or nullptr when the library lacks it.
  template <class Function>
  void bind_optional(Function*& entry, const char* name) const {
    entry = reinterpret_cast<Function*>(library_->find_symbol(name));
  }
  /// The same, adding `name` to the comma-separated list `missing` when the library lacks it
  /// (a group of entry points a feature needs, reported together).
  template <class Function>
  void bind_optional(Function*& entry, const char* name, std::string& missing) const {
    bind_optional(entry, name);
    if (entry == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(name);
  }
  /// The candidate that loaded ("libOpenCL.so.1", "/usr/local/cuda/lib64/libnvrtc.so").
  const std::string& path() const { return library_->path(); }

 private:
  void* require(const char* name) const;
  std::shared_ptr<cc::SharedLibrary> library_;
  std::string what_;
};

/// The path of a shared object loaded in this process whose file name contains `part`
/// ("libclang-cpp.so"), or "" when there is none.
std::string loaded_library_containing(const std::string& part);

/// Where to look for a library of the CUDA toolkit: each soname as the loader finds it, then in
/// the lib64/ and lib/ folders of $CUDA_PATH, $CUDA_HOME and /usr/local/cuda (a toolkit is often
/// installed without adding itself to the loader's path).
///   cuda_toolkit_candidates({"libnvrtc.so.13"}) ==
///       {"libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib/libnvrtc.so.13"}
std::vector<std::string> cuda_toolkit_candidates(const std::vector<std::string>& sonames);

}  // namespace cannl::backends::gpu
