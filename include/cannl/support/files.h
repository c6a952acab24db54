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
std::string executable_name();
/// build_files/<exe>/ under the working directory; created on first use.
std::filesystem::path build_dir();
/// log_files/<exe>/ under the working directory; created on first use.
std::filesystem::path log_dir();
/// Writes `contents` to a temporary file beside `path` and renames it over `path`.
/// Throws IoError naming the path on failure.
void write_atomically(const std::filesystem::path& path, std::string_view contents);
/// Reads a whole file; throws IoError naming the path on failure.
std::string read_file(const std::filesystem::path& path);

}  // namespace cannl::files
