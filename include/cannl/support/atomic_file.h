#pragma once
// A file written in pieces that appears at its path all at once: the one place of cannl that
// replaces a file (build artifacts and caches through files::write_atomically, checkpoints and
// safetensors through io's writer). The pieces go to a temporary file beside the path (a rename
// is atomic only within one file system), and commit() renames it over the path. Destroyed
// without commit (an exception, an interrupted write), it removes the temporary file and the
// previous file stays untouched. A symbolic link at the path keeps its link: its target is
// replaced. A file replaced keeps its permission bits (a checkpoint or a cache made private stays
// private); a new one gets 0644 less the umask. Every failure is an IoError naming the path.
//
//   files::AtomicFile out("ckpt.safetensors");
//   out.write(header);  out.write(payload);
//   out.commit(files::Durability::survives_power_loss);

#include <filesystem>
#include <string_view>

namespace cannl::files {

/// What a committed file survives. Each level costs a flush more than the one before.
///   out.commit(files::Durability::unflushed);  // a cache entry its reader verifies
enum class Durability {
  /// Nothing is flushed: readers never see a torn file, but after a crash (of the machine, not
  /// of the process) the path may hold an empty or partial new file. For files that are checked
  /// when read or made again on demand (generated sources, cache entries with a checksum).
  unflushed,
  /// The file's data is flushed (fsync) before the rename: after a crash the path holds the old
  /// or the complete new file; the rename itself may be lost (the old file comes back).
  complete_file,
  /// complete_file, and the directory is flushed after the rename, so the new file itself
  /// survives a power loss. A file system that cannot flush directories (EINVAL) is not a failure.
  survives_power_loss,
};

class AtomicFile {
 public:
  /// Creates the temporary file, with the permission bits of the file it will replace; throws
  /// IoError naming the path when it cannot (a missing directory, a full disk, ...).
  explicit AtomicFile(const std::filesystem::path& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Appends bytes; throws IoError naming the path on failure (disk full, file too large, ...).
  void write(std::string_view bytes);
  /// Flushes as `durability` asks and renames the temporary file over the path. Throws IoError on
  /// failure, leaving the previous file in place and no temporary file, except when only the
  /// directory's flush fails after the rename: then the path holds the new file and the message
  /// says its durability is not assured.
  void commit(Durability durability);

  /// The file written: the path given, or the target of a symbolic link there.
  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temporary_path() const { return temporary_; }

 private:
  /// Removes the temporary file (once its descriptor is closed) and throws IoError.
  [[noreturn]] void abandon(const std::string& what, const std::filesystem::path& about, int error);

  std::filesystem::path path_;
  std::filesystem::path temporary_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace cannl::files
