#pragma once
// One entry of the cc backend's compile cache, verified before it is loaded.
//
// An entry is the library `<stem>.so` and its record `<stem>.so.entry` beside it: the cache key
// (the digest of source, compiler identity and flags), the library's size and its SHA-256. A
// library is loaded only when its record matches it: dlopen of a truncated library dies with
// SIGBUS, and a same-named library of another program runs foreign code. Both files are written
// under temporary names, flushed to disk and renamed into place, the record first, so a crash or a
// racing process never leaves a library that looks verified but is not.
//
//   if (check_cache_entry(library, key).state == EntryState::Damaged) quarantine_cache_entry(...);
//   commit_cache_entry(compiler_output, library, key);   // after a successful compile

#include <filesystem>
#include <string>

namespace cannl::backends::cc {

enum class EntryState {
  Missing,  // no library: compile it
  Valid,    // the library matches its record: load it
  Damaged,  // a library that must not be loaded (see EntryCheck::problem)
};

struct EntryCheck {
  EntryState state = EntryState::Missing;
  std::string problem;  // for Damaged: "it is 512 bytes, its record says 20480 (truncated?)"
};

/// The record file of `library`: `<library>.entry`.
std::filesystem::path cache_record_path(const std::filesystem::path& library);

/// Compares `library` with its record and `key`. Reads the whole library (to digest it); never
/// throws for a damaged entry, only reports it.
///   check_cache_entry(cache / "add-0123.so", key).state == EntryState::Valid
EntryCheck check_cache_entry(const std::filesystem::path& library, const std::string& key);

/// Moves a damaged library to `<cache>/quarantine/` (replacing an earlier quarantined copy of the
/// same name, so the folder stays bounded) and warns once, naming the library, the problem and
/// where the copy went. Its record stays: the rebuild replaces it, and a racing process may have
/// just written it for its own, good library. Throws IoError when the library cannot be moved
/// away (a read-only cache): it must not be loaded, and it cannot be rebuilt in place.
void quarantine_cache_entry(const std::filesystem::path& library, const std::string& problem);

/// Makes `built` (a compiler's output beside `library`) the cache entry for `key`: flushes it,
/// writes the record (flushed, renamed into place), renames the library over `library` and
/// flushes the directory. Throws IoError naming the path on failure; `built` is removed then.
void commit_cache_entry(const std::filesystem::path& built, const std::filesystem::path& library,
                        const std::string& key);

/// Prepares the cache directory once per process: creates it when missing and removes the
/// temporary files of compiles that were killed (files::remove_stale_temporaries). A read-only
/// cache directory that exists is fine: entries are only read from it.
void prepare_cache_directory(const std::filesystem::path& cache_dir);

}  // namespace cannl::backends::cc
