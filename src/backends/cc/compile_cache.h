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
// A routine printed as several files (codegen::emit_c_split) is built by load_or_compile_units:
// each file an object entry of the cache, compiled in parallel, the objects linked into the
// routine's library.
//
// A library may link others of the same cache directory (a routine and the kernel library it
// calls, see kernel_library.h): they are found next to it at run time, by their sonames.

#include <functional>
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

/// The same for a library whose text does not depend on the program (the kernel library):
/// with `shared`, a build folder lacking it first takes a verified copy from the per-user cache
/// (config cc_kernel_cache_dir, checked against its record and the same digest), and one it
/// compiles is copied there, so a fresh build folder need not compile it again. The copy is
/// then an entry of the build folder's cache like any other (routines find it at $ORIGIN).
std::shared_ptr<SharedLibrary> load_or_compile(const std::string& name, const std::string& source,
                                               const LinkOptions& link, bool shared);

/// One translation unit of a library built from several (load_or_compile_units).
struct CompileUnit {
  std::string name;  // file stem under build_files/<exe>/
  std::string text;
  /// Compiled at cc_optimization_level; else at cc_cold_optimization_level (not above it).
  bool hot = true;
  /// Nothing to optimize (codegen::SourceUnit::plain): compiled at -O0.
  bool plain = false;
};

/// Builds one library from `units`: each unit is compiled to an object file of the cache
/// (cache/<unit>-<digest16>.o, verified like libraries) unless it is there already, at most
/// `cc_compile_jobs` at once, and the objects are linked into cache/<name>-<digest16>.so, whose
/// digest is that of the units' digests, the flags and `link_key`. `link` gives the libraries to
/// link: it runs beside the unit compiles (it may compile the kernel library) and must depend
/// only on what `link_key` names. Fully cached, no compiler runs. Readable copies of the units
/// are build_files/<exe>/<unit>.c. Throws CompileError like load_or_compile (the first failing
/// unit's).
std::shared_ptr<SharedLibrary> load_or_compile_units(const std::string& name, const std::vector<CompileUnit>& units,
                                                     const std::function<LinkOptions()>& link,
                                                     const std::string& link_key);

/// Runs `jobs[k]()` for every k on up to `workers` threads (this one included), in the caller's
/// order; rethrows the first failure once all have finished.
void run_in_parallel(const std::vector<std::function<void()>>& jobs, int workers);

/// The compiler processes one routine's units may run at once (config cc_compile_jobs).
int compile_jobs();

}  // namespace cannl::backends::cc
