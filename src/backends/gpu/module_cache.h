#pragma once
// The on-disk cache of compiled GPU modules: the compiled code (a cubin or PTX for CUDA, the
// program binary for OpenCL) of a source, under the folder the caller names, keyed by the SHA-256
// of everything that changes the code (source, device, compiler and driver versions, options).
// Entries are the cc backend's verified entries (backends/cc/cache_entry.h): written under a
// temporary name with a record of their size and digest, renamed into place; a damaged one is
// quarantined with a warning and compiled again, never loaded.
//
//   const ModuleCacheEntry entry = module_cache_entry(dir, "add_k0", "cubin", source + tag);
//   if (auto code = read_cached_module(entry)) ... else store_cached_module(entry, compile());

#include <filesystem>
#include <optional>
#include <string>

namespace cannl::backends::gpu {

struct ModuleCacheEntry {
  /// `<cache_dir>/<name>-<digest16>.<extension>`; empty when the cache is off.
  std::filesystem::path file;
  /// The SHA-256 of the key text, as the entry's record holds it.
  std::string key;
};

/// The entry for `key_text` in `cache_dir` ("" turns the cache off: every read misses, stores do
/// nothing). `name` makes the file recognizable (a kernel's name; characters other than letters,
/// digits, '_' and '-' become '_'). Creates the folder when missing.
///   module_cache_entry("build_files/x/gpu", "add_k0", "ptx", text).file == ".../add_k0-1f2e....ptx"
ModuleCacheEntry module_cache_entry(const std::filesystem::path& cache_dir, const std::string& name,
                                    const std::string& extension, const std::string& key_text);

/// The cached code of `entry`, or nullopt when there is none. A damaged entry (truncated,
/// foreign, without its record) is moved to `<cache_dir>/quarantine/` with a warning and reads as
/// missing; so does an entry that cannot be read or moved (a warning says why).
std::optional<std::string> read_cached_module(const ModuleCacheEntry& entry);

/// Stores `code` as `entry`, atomically. A failure (a read-only cache) is a warning, not an
/// error: the module was compiled and runs; the next process compiles it again.
void store_cached_module(const ModuleCacheEntry& entry, const std::string& code);

/// Quarantines an entry that verified but that the driver refused to load (`problem` says how),
/// so that it is compiled again; errors are warnings.
void discard_cached_module(const ModuleCacheEntry& entry, const std::string& problem);

}  // namespace cannl::backends::gpu
