#pragma once
// A file written in pieces that appears at its path all at once: the pieces go to a temporary
// file beside it, and commit() renames it over the path. Destroyed without commit (an exception,
// an interrupted write), it removes the temporary file and the previous file stays untouched. A
// symbolic link at the path keeps its link: its target is replaced. A file replaced keeps its
// permission bits (a checkpoint made private stays private); a new one gets 0644 less the umask.
// Temporaries of a killed earlier writer of the same file are removed when the next one starts.
//
//   AtomicFile out("ckpt.safetensors");
//   out.write(header);  out.write(payload);
//   out.commit(/*sync_to_disk=*/true);

#include <filesystem>
#include <string_view>

namespace cannl::io {

class AtomicFile {
 public:
  /// Creates the temporary file; throws IoError naming the path when it cannot.
  explicit AtomicFile(std::filesystem::path path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Appends bytes; throws IoError on failure (disk full, ...).
  void write(std::string_view bytes);
  /// Flushes the file's data to disk (fsync, always: after a crash the path holds the old or the
  /// complete new file, never a partial one) and renames the temporary file over the path; with
  /// `sync_to_disk` the directory is flushed too, so the new file itself survives a power loss
  /// (without it, a crash right after commit may bring back the previous file). Throws IoError on
  /// failure, leaving the previous file in place, except when only the directory's flush fails
  /// after the rename: then the path holds the new file and the message says its durability is
  /// not assured. A file system that cannot flush directories (EINVAL) is not a failure.
  void commit(bool sync_to_disk);

  const std::filesystem::path& temporary_path() const { return temporary_; }

 private:
  std::filesystem::path path_;
  std::filesystem::path temporary_;
  int fd_ = -1;
};

}  // namespace cannl::io
