// Plots of MFU over time per plan (measured, baseline with its noise band, prediction) as a small
// scene of primitives in pixel coordinates. The SVG writer lives here; the PNG writer (Qt6 Gui) is
// the separate target mplan_runs_png, drawing the same scene.
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "runs/regress.h"

namespace mplan::runs {

struct PlotPrim {
  enum Kind { line, polyline, rect, circle, text } kind = line;
  std::vector<double> xy;       // line: x1 y1 x2 y2; polyline: x y ...; rect: x y w h; circle/text: x y
  std::string stroke = "none";  // "#rrggbb" or "none"
  std::string fill = "none";
  double stroke_width = 1;
  double opacity = 1;  // fill opacity
  bool dashed = false;
  double radius = 0;  // circle
  std::string label;  // text
  double font_px = 12;
  int anchor = 0;  // text: -1 start, 0 middle, 1 end
  bool bold = false;
};

struct PlotScene {
  double width = 0, height = 0;
  std::vector<PlotPrim> prims;
};

// Maps a value range to a pixel range (linear), y inverted by passing pixels high->low.
struct AxisMap {
  double v0 = 0, v1 = 1, p0 = 0, p1 = 1;
  double operator()(double v) const { return v1 == v0 ? p0 : p0 + (v - v0) / (v1 - v0) * (p1 - p0); }
};

// Round tick values covering [lo, hi] (about `count` of them).
std::vector<double> nice_ticks(double lo, double hi, int count);

// One panel per plan (newest plans' history, oldest run on the left).
PlotScene regress_plot(const RegressReport& report);

std::string scene_to_svg(const PlotScene& scene);
// Writes `path` as SVG (.svg) or PNG (.png, when `png_writer` is given); other extensions are errors.
using PngWriter = Status (*)(const PlotScene&, const std::string&);
Status write_plot(const PlotScene& scene, const std::string& path, PngWriter png_writer);

}  // namespace mplan::runs
