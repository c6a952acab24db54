#pragma once
// `cannl demo`: the main job (see demo.cpp), on one device, several devices of a multi-device CPU
// context, or several processes under mpirun (data-parallel training).

#include <string>

#include "options.h"

namespace cannl::app {

struct DemoOptions {
  int epochs = 40;
  double lr = 0.1;
  std::string model = "moons";  // moons | makemore (the makemore MLP on data/names)
  int devices = 1;              // replicas in this process (devices of a multi-device context)
  bool distributed = false;     // one or more replicas per MPI process (started by mpirun)
  std::string checkpoint;       // written after every epoch (rank 0, atomically) when set
  bool resume = false;          // continue from `checkpoint`
  std::string data = "data/names/first-names-en.txt";  // makemore's names
};

/// The options of `cannl demo` (for the parser and --help).
const CommandSpec& demo_command_spec();
/// The options a parsed command line asks for.   demo_options(args).epochs == 40 by default
DemoOptions demo_options(const ParsedArgs& args);

/// Runs the demo; returns the process exit code.
int run_demo(const DemoOptions& options);

}  // namespace cannl::app
