// The timeline's time-to-pixel mapping (see time_to_pixel.h).
#include "gui/models/time_to_pixel.h"

#include <algorithm>
#include <cmath>

namespace mplan::gui {

void TimeToPixel::setExtent(double start, double end) {
  extent_start_s = start;
  extent_end_s = end > start ? end : start + 1e-6;
  showAll();
}

void TimeToPixel::setPixels(double x0_px, double width_px) {
  x0 = x0_px;
  width = std::max(1.0, width_px);
}

bool TimeToPixel::showsAll() const {
  double tol = 1e-9 * (extent_end_s - extent_start_s);
  return start_s <= extent_start_s + tol && end_s >= extent_end_s - tol;
}

void TimeToPixel::zoomAt(double x, double factor) {
  if (!(factor > 0)) return;
  double t = toTime(x);
  double full = extent_end_s - extent_start_s;
  double span_new = std::clamp(span() / factor, std::min(min_span_s, full), full);
  double frac = (x - x0) / width;
  start_s = t - frac * span_new;
  end_s = start_s + span_new;
  clamp();
}

void TimeToPixel::panPixels(double dx) {
  double dt = dx / pixelsPerSecond();
  start_s -= dt;
  end_s -= dt;
  clamp();
}

void TimeToPixel::clamp() {
  double s = span();
  double full = extent_end_s - extent_start_s;
  if (s >= full) {
    showAll();
    return;
  }
  if (start_s < extent_start_s) start_s = extent_start_s, end_s = start_s + s;
  if (end_s > extent_end_s) end_s = extent_end_s, start_s = end_s - s;
}

std::vector<double> niceTicks(double start, double end, int max_ticks) {
  std::vector<double> ticks;
  if (!(end > start) || max_ticks < 1) return ticks;
  double raw = (end - start) / max_ticks;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  for (double t = std::ceil(start / step) * step; t <= end + step * 1e-9; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

}  // namespace mplan::gui
