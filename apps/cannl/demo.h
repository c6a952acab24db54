#pragma once

namespace cannl::app {

struct DemoOptions {
  int epochs = 40;
  double lr = 0.1;
};

/// Runs the moons demo; returns the process exit code.
int run_demo(const DemoOptions& options);

}  // namespace cannl::app
