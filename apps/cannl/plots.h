#pragma once
// Pictures of a training run, drawn by gnuplot: the loss curve and a decision boundary.

#include <filesystem>
#include <vector>

#include "cannl/nn/datasets.h"

namespace cannl::app {

struct PlotInputs {
  std::vector<double> loss_curve;     // one value per epoch
  datasets::Dataset data;
  std::vector<double> grid_points;    // grid x grid points, (x, y) pairs
  std::vector<double> grid_logits;    // two logits per grid point
  int grid = 0;
  std::filesystem::path directory;
};

/// Writes loss_curve.png and decision_boundary.png (plus their .dat and .gp sources) into
/// `directory`. Without gnuplot it writes the sources and warns how to install it.
void write_plots(const PlotInputs& inputs);

}  // namespace cannl::app
