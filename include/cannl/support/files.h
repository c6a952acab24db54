#pragma once
// Files: the build/log directories of the running executable and atomic writes.
//
//   auto dir = files::build_dir();                 // build_files/<exe>/ (created)
//   files::write_atomically(dir / "step.c", src);  // temp file + rename: never a torn file
//   (files written in pieces: AtomicFile, atomic_file.h)

#include <filesystem>
#include <string>
#include <string_view>

namespace cannl::files {

/// Base name of the running executable (config key `build_files_prefix` overrides).
///   executable_name() == "test_support"  // from /proc/self/exe
std::string executable_name();
/// build_files/<exe>/ under the working directory; created on first use.
std::filesystem::path build_dir();
/// log_files/<exe>/ under the working directory; created on first use.
std::filesystem::path log_dir();
/// Writes `contents` to a temporary file beside `path` and renames it over `path` (an AtomicFile,
/// atomic_file.h), so readers see the old or the new file, never a torn one. A replaced file
/// keeps its permission bits; a link at `path` keeps its link and its target is replaced.
/// `sync_to_disk` flushes the file before the rename and the directory after it, so the new file
/// survives a power loss (slower; Durability::survives_power_loss); without it nothing is flushed
/// (Durability::unflushed: for files checked when read or made again on demand). The parent
/// directory must exist. Throws IoError naming the path and the system's reason on failure,
/// leaving the previous file in place and no temporary file behind.
///
///   files::write_atomically(files::build_dir() / "step.c", source);
void write_atomically(const std::filesystem::path& path, std::string_view contents,
                      bool sync_to_disk = false);
/// Reads a whole file (binary); throws IoError naming the path on failure.
///   std::string source = files::read_file("step.c");
std::string read_file(const std::filesystem::path& path);

/// The name every temporary file of cannl gets beside `path`: `.<name>.tmp.<pid>.<counter>`
/// (unique across threads and processes). Writers may append a suffix (`.log`). The pid in the
/// name lets remove_stale_temporaries tell a dead writer's leftovers from a live writer's file.
///   temporary_beside("cache/add.so") == "cache/.add.so.tmp.4242.0"
std::filesystem::path temporary_beside(const std::filesystem::path& path);
/// Removes, best effort, the temporary files in `dir` (not recursive) that a killed writer left:
/// those named by temporary_beside whose process no longer exists, and any older than a day (a
/// reused pid). With `for_name`, only the temporaries of that file name. Errors (a read-only
/// directory) are ignored. Returns how many files it removed.
///   files::remove_stale_temporaries(files::build_dir() / "cache");
int remove_stale_temporaries(const std::filesystem::path& dir, std::string_view for_name = {});
/// fsync of a file (by path), so that its data survives a power loss. Throws IoError naming the
/// path when it cannot be opened or flushed.
void sync_file(const std::filesystem::path& path);
/// A directory held open to flush (fsync) it after a rename into it, which makes the rename
/// survive a power loss. Opened before the rename, a directory that cannot be opened fails the
/// writer while the previous file is still in place. Throws IoError naming the directory when it
/// cannot be opened or flushed; a file system that cannot flush directories at all (EINVAL) is
/// not an error: nothing more can be done there.
///   files::OpenDirectory dir(path.parent_path());  rename(temporary, path);  dir.sync();
class OpenDirectory {
 public:
  explicit OpenDirectory(const std::filesystem::path& dir);  // "" is the working directory
  ~OpenDirectory();
  OpenDirectory(const OpenDirectory&) = delete;
  OpenDirectory& operator=(const OpenDirectory&) = delete;
  void sync();

 private:
  std::filesystem::path dir_;
  int fd_ = -1;
};
/// OpenDirectory(dir).sync(): the same errors.
///   files::sync_directory(library.parent_path());
void sync_directory(const std::filesystem::path& dir);
/// Whether `path` names a regular file (following links). For the places where a file is
/// expected: a FIFO or a device would block or never end, a directory gives odd errors.
///   if (!files::is_regular_file(weights)) throw IoError(...);
bool is_regular_file(const std::filesystem::path& path);

}  // namespace cannl::files
