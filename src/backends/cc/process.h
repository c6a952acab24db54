#pragma once
// Running a program without a shell: argv is passed as is (no quoting or injection issues), its
// stdout and stderr go to one file, stdin reads /dev/null.
//
//   auto r = run_process({"/usr/bin/cc", "--version"}, "/tmp/out.txt");
//   if (r.started && r.exit_status == 0) ...

#include <filesystem>
#include <string>
#include <vector>

namespace cannl::backends::cc {

struct ProcessResult {
  bool started = false;  // false: the program could not be executed (see `error`)
  int exit_status = -1;  // exit code, or 128 + signal number when killed by a signal
  std::string error;     // why it did not start, e.g. "No such file or directory"
};

/// Runs argv[0] (looked up in PATH when it has no '/') and waits for it.
ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& output);

/// The command as a shell would need it typed, for messages ('quoted' where needed).
std::string shell_quoted(const std::vector<std::string>& argv);

/// Full path of `program`: itself when it contains '/', else the first executable match in PATH;
/// "" when none.
std::string resolve_program(const std::string& program);

}  // namespace cannl::backends::cc
