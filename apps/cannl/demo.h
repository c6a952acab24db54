#pragma once
// `cannl demo`: the main job (see demo.cpp).

#include "options.h"

namespace cannl::app {

struct DemoOptions {
  int epochs = 40;
  double lr = 0.1;
};

/// The options of `cannl demo` (for the parser and --help).
const CommandSpec& demo_command_spec();
/// The options a parsed command line asks for.   demo_options(args).epochs == 40 by default
DemoOptions demo_options(const ParsedArgs& args);

/// Runs the moons demo; returns the process exit code.
int run_demo(const DemoOptions& options);

}  // namespace cannl::app
