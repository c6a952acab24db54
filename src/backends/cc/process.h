#pragma once
// The cc backend's names for the shared child-process helpers (cannl/support/process.h).
//
//   auto r = run_process({"/usr/bin/cc", "--version"}, "/tmp/out.txt");

#include "cannl/support/process.h"

namespace cannl::backends::cc {

using ProcessResult = process::Result;

/// process::run: argv without a shell, stdout and stderr to `output`.
inline ProcessResult run_process(const std::vector<std::string>& argv,
                                 const std::filesystem::path& output) {
  return process::run(argv, output);
}
using process::resolve_program;
using process::shell_quoted;

}  // namespace cannl::backends::cc
