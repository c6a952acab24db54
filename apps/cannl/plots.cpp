// Pictures of a training run through gnuplot (see plots.h).
#include "plots.h"

#include <cstdio>
#include <sstream>

#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/log.h"
#include "cannl/support/process.h"

namespace cannl::app {
namespace {

std::string loss_data(const std::vector<double>& curve) {
  std::ostringstream out;
  for (std::size_t i = 0; i < curve.size(); ++i) out << (i + 1) << " " << curve[i] << "\n";
  return out.str();
}

std::string grid_data(const PlotInputs& in) {
  std::ostringstream out;
  for (int j = 0; j < in.grid; ++j) {
    for (int i = 0; i < in.grid; ++i) {
      const std::size_t k = static_cast<std::size_t>(j * in.grid + i);
      const double margin = in.grid_logits[2 * k + 1] - in.grid_logits[2 * k];
      out << in.grid_points[2 * k] << " " << in.grid_points[2 * k + 1] << " " << margin << "\n";
    }
    out << "\n";
  }
  return out.str();
}

std::string points_data(const datasets::Dataset& d) {
  std::ostringstream out;
  for (std::int64_t i = 0; i < d.samples; ++i)
    out << d.features[2 * i] << " " << d.features[2 * i + 1] << " " << d.labels[i] << "\n";
  return out.str();
}

const char* kScript = R"(set terminal pngcairo size 800,600
set output 'loss_curve.png'
set title 'cannl demo: training loss'
set xlabel 'epoch'
set ylabel 'mean cross-entropy'
set logscale y
plot 'loss_curve.dat' with linespoints title 'loss'
unset logscale y
set output 'decision_boundary.png'
set title 'cannl demo: decision boundary (class 1 minus class 0 logit)'
set xlabel 'x'
set ylabel 'y'
set view map
set palette defined (-1 '#4477aa', 0 'white', 1 '#cc6677')
set cbrange [-8:8]
splot 'decision_boundary.dat' using 1:2:3 with pm3d notitle, \
      'points.dat' using 1:2:(0):3 with points pt 7 ps 0.5 palette notitle
)";

}  // namespace

void write_plots(const PlotInputs& in) {
  const auto& dir = in.directory;
  try {
    files::write_atomically(dir / "loss_curve.dat", loss_data(in.loss_curve));
    files::write_atomically(dir / "decision_boundary.dat", grid_data(in));
    files::write_atomically(dir / "points.dat", points_data(in.data));
    files::write_atomically(dir / "plots.gp", kScript);
  } catch (const IoError& e) {
    // The pictures are a by-product: a read-only build_files/ must not fail the run.
    logging::warn(std::string("no plots: ") + e.what());
    return;
  }
  const std::string gnuplot = process::resolve_program("gnuplot");
  if (gnuplot.empty()) {
    logging::warn("gnuplot not found: wrote the plot sources to " + dir.string() +
                  "; install it with `apt-get install gnuplot-nox` to get the PNG pictures");
    return;
  }
  // No shell: the directory is the child's working directory, never part of a command line.
  const process::Result r = process::run({gnuplot, "plots.gp"}, dir / "plots.log", dir);
  if (!r.started || r.exit_status != 0) {
    logging::warn("gnuplot failed; see " + (dir / "plots.log").string());
    return;
  }
  std::printf("wrote %s and %s\n", (dir / "loss_curve.png").c_str(),
              (dir / "decision_boundary.png").c_str());
}

}  // namespace cannl::app
