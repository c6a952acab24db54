// Verified compile-cache entries (see cache_entry.h).
#include "backends/cc/cache_entry.h"

#include <sys/stat.h>

#include <mutex>
#include <set>
#include <sstream>

#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/hash.h"
#include "cannl/support/log.h"

namespace cannl::backends::cc {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRecordHeader = "cannl compile cache entry 1";
constexpr std::uintmax_t kMaxRecordBytes = 4096;

struct Record {
  std::string key;
  std::uintmax_t size = 0;
  std::string digest;
};

std::string format_record(const Record& r) {
  return std::string(kRecordHeader) + "\nkey " + r.key + "\nsize " + std::to_string(r.size) +
         "\nsha256 " + r.digest + "\n";
}

/// The record's fields, or an empty key when the text is not a record of this format.
Record parse_record(const std::string& text) {
  std::istringstream in(text);
  std::string header, key_word, size_word, digest_word;
  Record r;
  if (!std::getline(in, header) || header != kRecordHeader) return {};
  if (!(in >> key_word >> r.key >> size_word >> r.size >> digest_word >> r.digest)) return {};
  if (key_word != "key" || size_word != "size" || digest_word != "sha256" || r.digest.size() != 64)
    return {};
  return r;
}

EntryCheck damaged(std::string problem) { return {EntryState::Damaged, std::move(problem)}; }

/// Valid when `library` (of `size` bytes) is what `record` describes for `key`.
EntryCheck compare_with_record(const fs::path& library, std::uintmax_t size, const Record& record,
                               const std::string& key) {
  if (record.key.empty())
    return damaged("its record " + cache_record_path(library).string() + " is not readable as one");
  if (record.key != key)
    return damaged("its record is for another source or compiler (key " + record.key.substr(0, 16) +
                   "...)");
  if (size != record.size)
    return damaged("it is " + std::to_string(size) + " bytes, its record says " +
                   std::to_string(record.size) + (size < record.size ? " (truncated?)" : ""));
  std::string bytes;
  try {
    bytes = files::read_file(library);
  } catch (const IoError& e) {
    return damaged(std::string("it cannot be read: ") + e.what());
  }
  if (bytes.size() != record.size || sha256_hex(bytes) != record.digest)
    return damaged("its contents differ from the SHA-256 in its record");
  return {EntryState::Valid, ""};
}

}  // namespace

fs::path cache_record_path(const fs::path& library) { return library.string() + ".entry"; }

EntryCheck check_cache_entry(const fs::path& library, const std::string& key) {
  struct stat info {};
  if (::lstat(library.c_str(), &info) != 0) return {EntryState::Missing, ""};
  if (!S_ISREG(info.st_mode)) return damaged("it is not a regular file");
  const fs::path record_path = cache_record_path(library);
  std::error_code error;
  const std::uintmax_t record_size = fs::file_size(record_path, error);
  if (error)
    return damaged("it has no record beside it (left by an interrupted compile, an older cannl or "
                   "another program)");
  if (record_size > kMaxRecordBytes || !files::is_regular_file(record_path))
    return damaged("its record " + record_path.string() + " is not a record");
  std::string text;
  try {
    text = files::read_file(record_path);
  } catch (const IoError& e) {
    return damaged(std::string("its record cannot be read: ") + e.what());
  }
  return compare_with_record(library, static_cast<std::uintmax_t>(info.st_size), parse_record(text),
                             key);
}

void quarantine_cache_entry(const fs::path& library, const std::string& problem) {
  const fs::path dir = library.parent_path() / "quarantine";
  const fs::path copy = dir / library.filename();
  std::error_code error;
  fs::create_directories(dir, error);
  if (!error) fs::rename(library, copy, error);
  if (error && fs::exists(library))
    throw IoError("the cached library " + library.string() + " must be rebuilt (" + problem +
                  ") but cannot be moved away: " + error.message() +
                  "; make build_files/ writable or delete the file");
  logging::warn("compile cache: " + library.string() + " was not loaded: " + problem +
                "; moved it to " + copy.string() + " and rebuilding");
}

void commit_cache_entry(const fs::path& built, const fs::path& library, const std::string& key) {
  try {
    files::sync_file(built);
    const std::string bytes = files::read_file(built);
    const Record record{key, bytes.size(), sha256_hex(bytes)};
    // Record first: a library is never in place without the record that vouches for it.
    files::write_atomically(cache_record_path(library), format_record(record), /*sync_to_disk=*/true);
  } catch (const IoError&) {
    std::error_code ignored;
    fs::remove(built, ignored);
    throw;
  }
  std::error_code error;
  fs::rename(built, library, error);
  if (error) {
    fs::remove(built, error);
    throw IoError("cannot move the compiled library into place at " + library.string() + ": " +
                  error.message());
  }
  files::sync_directory(library.parent_path());
}

void prepare_cache_directory(const fs::path& cache_dir) {
  static std::mutex mutex;
  static std::set<fs::path> prepared;
  std::lock_guard lock(mutex);
  if (prepared.count(cache_dir)) return;
  std::error_code error;
  if (!fs::is_directory(cache_dir, error)) {
    fs::create_directories(cache_dir, error);
    if (error)
      throw IoError("cannot create the compile cache directory " + cache_dir.string() + ": " +
                    error.message());
  }
  files::remove_stale_temporaries(cache_dir);
  files::remove_stale_temporaries(cache_dir.parent_path());  // the readable .c copies
  prepared.insert(cache_dir);
}

}  // namespace cannl::backends::cc
