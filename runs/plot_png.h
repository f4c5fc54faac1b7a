// PNG rendering of a plot scene with Qt6 Gui (QImage + QPainter on the offscreen platform); built as
// the target mplan_runs_png so the runs library itself needs no Qt.
#pragma once
#include <string>

#include "core/status.h"
#include "runs/plot.h"

namespace mplan::runs {

Status write_png(const PlotScene& scene, const std::string& path);

}  // namespace mplan::runs
