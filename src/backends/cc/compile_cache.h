#pragma once
// The cc backend's compiler driver and on-disk compile cache.
//
// The digest of (source, compiler identity, flags) names the library
// build_files/<exe>/cache/<routine>-<digest16>.so; with cc_cache on, an existing library is loaded
// without running the compiler, in this process or any later one, once it is verified against
// the record beside it (cache_entry.h): a truncated, foreign or mismatching library is moved to
// cache/quarantine/ with a warning and rebuilt. Libraries are written under a temporary name,
// flushed and renamed into place, so racing processes never see a torn file.
//
//   auto lib = load_or_compile("add", source_text);   // CompileError on failure
//
// A library may link others of the same cache directory (a routine and the kernel library it
// calls, see kernel_library.h): they are found next to it at run time, by their sonames.

#include <memory>
#include <string>
#include <vector>

#include "backends/cc/shared_library.h"

namespace cannl::backends::cc {

/// How a library links others of the compile cache; both fields are part of its digest.
struct LinkOptions {
  /// Libraries of the cache directory to link (paths as SharedLibrary::path() gives them; each
  /// built with `soname`): found at run time through the $ORIGIN run path, so the cache
  /// directory may move. Their file names carry their digests, so a changed library changes
  /// the digest of every library linking it.
  std::vector<std::string> libraries;
  /// Give the library a soname, its cache file name, so that others can link it.
  bool soname = false;
};

/// Writes `source` to build_files/<exe>/<name>.c, then loads the cached library for it or
/// compiles one. Throws CompileError (with the command, the compiler output and the .c path) or
/// BackendUnavailable (no compiler).
std::shared_ptr<SharedLibrary> load_or_compile(const std::string& name, const std::string& source,
                                               const LinkOptions& link = {});

}  // namespace cannl::backends::cc
