#pragma once
// Running a program without a shell: argv is passed as is (no quoting or injection issues: a
// quote or `$(...)` in a path is just a character), stdin reads /dev/null.
//
//   auto r = process::run({"/usr/bin/cc", "--version"}, "/tmp/out.txt");
//   if (r.started && r.exit_status == 0) ...
//   auto out = process::capture({"gzip", "-dc", path});   // stdout as a string

#include <filesystem>
#include <string>
#include <vector>

namespace cannl::process {

struct Result {
  bool started = false;  // false: the program could not be executed (see `error`)
  int exit_status = -1;  // exit code, or 128 + signal number when killed by a signal
  std::string error;     // why it did not start, e.g. "No such file or directory"
};

/// Runs argv[0] (looked up in PATH when it has no '/') and waits for it; its stdout and stderr go
/// to `output` (created or truncated). With `working_directory` the program runs there.
///   process::run({"gnuplot", "plots.gp"}, dir / "plots.log", dir)
Result run(const std::vector<std::string>& argv, const std::filesystem::path& output,
           const std::filesystem::path& working_directory = {});

/// What a finished program wrote to stdout (stderr goes to /dev/null).
struct Captured {
  Result result;
  std::string output;
};
/// Runs argv[0] as run() does and collects its standard output.
///   process::capture({"gzip", "-dc", "/data/train.gz"}).output
Captured capture(const std::vector<std::string>& argv);

/// setenv(name, value) unless `name` is set, serialized with this module's spawns: they pass
/// `environ` to the child, and a setenv in another thread may move that array under them (the
/// child then reads freed memory: posix_spawn fails with EFAULT, "Bad address"). Use it, not
/// setenv, for any variable the process sets once it may be spawning.
///   process::set_environment_default("GOMP_SPINCOUNT", "10000")
void set_environment_default(const std::string& name, const std::string& value);

/// setenv(name, value), replacing a value it has, serialized with spawns as
/// set_environment_default is.
///   process::set_environment("OMP_NUM_THREADS", "6")
void set_environment(const std::string& name, const std::string& value);

/// The command as a shell would need it typed, for messages ('quoted' where needed).
///   shell_quoted({"cc", "a b.c"}) == "cc 'a b.c'"
std::string shell_quoted(const std::vector<std::string>& argv);

/// Full path of `program`: itself when it contains '/', else the first executable match in PATH;
/// "" when none.   resolve_program("sh") == "/usr/bin/sh"
std::string resolve_program(const std::string& program);

}  // namespace cannl::process
