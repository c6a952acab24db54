#pragma once
// Files: the build/log directories of the running executable and atomic writes.
//
//   auto dir = files::build_dir();                 // build_files/<exe>/ (created)
//   files::write_atomically(dir / "step.c", src);  // temp file + rename: never a torn file

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
/// Writes `contents` to a temporary file beside `path` and renames it over `path`, so readers see
/// the old or the new file, never a torn one. `sync_to_disk` fsyncs before the rename (durability
/// across power loss; slower). The parent directory must exist. Throws IoError naming the path
/// and the system's reason on failure, leaving no temporary file behind.
///
///   files::write_atomically(files::build_dir() / "step.c", source);
void write_atomically(const std::filesystem::path& path, std::string_view contents,
                      bool sync_to_disk = false);
/// Reads a whole file (binary); throws IoError naming the path on failure.
///   std::string source = files::read_file("step.c");
std::string read_file(const std::filesystem::path& path);

}  // namespace cannl::files
