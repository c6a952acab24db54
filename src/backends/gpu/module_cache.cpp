// The on-disk cache of compiled GPU modules (see module_cache.h).
#include "backends/gpu/module_cache.h"

#include "backends/cc/cache_entry.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/hash.h"
#include "cannl/support/log.h"

namespace cannl::backends::gpu {

namespace fs = std::filesystem;

namespace {

std::string file_name_part(const std::string& name) {
  std::string out = name.empty() ? "module" : name;
  for (char& c : out) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-';
    if (!plain) c = '_';
  }
  return out.substr(0, 64);
}

void warn_cache(const ModuleCacheEntry& entry, const std::string& what) {
  logging::warn("GPU module cache: " + entry.file.string() + ": " + what);
}

}  // namespace

ModuleCacheEntry module_cache_entry(const fs::path& cache_dir, const std::string& name,
                                    const std::string& extension, const std::string& key_text) {
  ModuleCacheEntry entry;
  entry.key = sha256_hex(key_text);
  if (cache_dir.empty()) return entry;
  const fs::path dir = fs::absolute(cache_dir);
  cc::prepare_cache_directory(dir);
  entry.file = dir / (file_name_part(name) + "-" + entry.key.substr(0, 16) + "." + extension);
  return entry;
}

std::optional<std::string> read_cached_module(const ModuleCacheEntry& entry) {
  if (entry.file.empty()) return std::nullopt;
  try {
    const cc::EntryCheck check = cc::check_cache_entry(entry.file, entry.key);
    if (check.state == cc::EntryState::Damaged) cc::quarantine_cache_entry(entry.file, check.problem);
    if (check.state != cc::EntryState::Valid) return std::nullopt;
    // The check read and digested these bytes; a writer racing us renames a complete file over
    // this one, never writes into it, so reading again gives the same or another complete entry.
    return files::read_file(entry.file);
  } catch (const IoError& e) {
    warn_cache(entry, std::string("not usable, compiling: ") + e.what());
    return std::nullopt;
  }
}

void store_cached_module(const ModuleCacheEntry& entry, const std::string& code) {
  if (entry.file.empty()) return;
  const fs::path built = files::temporary_beside(entry.file);
  try {
    files::write_atomically(built, code);
    cc::commit_cache_entry(built, entry.file, entry.key);
  } catch (const IoError& e) {
    std::error_code ignored;
    fs::remove(built, ignored);
    warn_cache(entry, std::string("cannot store the compiled module: ") + e.what());
  }
}

void discard_cached_module(const ModuleCacheEntry& entry, const std::string& problem) {
  if (entry.file.empty()) return;
  try {
    cc::quarantine_cache_entry(entry.file, problem);
  } catch (const IoError& e) {
    warn_cache(entry, e.what());
  }
}

}  // namespace cannl::backends::gpu
