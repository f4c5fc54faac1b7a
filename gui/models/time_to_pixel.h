// The timeline's time-to-pixel mapping: a visible time window [start_s, end_s] drawn into the pixel
// range [x0, x0 + width], with zoom about a pixel, pan by pixels, and clamping to the data extent.
// Plain struct (no Qt) so it is tested on its own; the timeline view only asks it questions.
#pragma once
#include <vector>

namespace mplan::gui {

struct TimeToPixel {
  double extent_start_s = 0, extent_end_s = 1;  // all data (the view never leaves it)
  double start_s = 0, end_s = 1;                // visible window
  double x0 = 0, width = 1;                     // pixels the window is drawn into
  double min_span_s = 1e-7;                     // deepest zoom (100 ns across the view)

  // Sets the extent and shows all of it.
  void setExtent(double start, double end);
  void setPixels(double x0_px, double width_px);
  double span() const { return end_s - start_s; }
  double pixelsPerSecond() const { return width / span(); }
  double toPixel(double t) const { return x0 + (t - start_s) * pixelsPerSecond(); }
  double toTime(double x) const { return start_s + (x - x0) / pixelsPerSecond(); }
  double durationToPixels(double d) const { return d * pixelsPerSecond(); }
  // factor > 1 zooms in; the time under pixel x stays under x.
  void zoomAt(double x, double factor);
  // Moves the window by dx pixels (dx > 0 shows earlier times, like dragging the content right).
  void panPixels(double dx);
  void showAll() { start_s = extent_start_s, end_s = extent_end_s; }
  bool showsAll() const;
  // True when [t, t + d] overlaps the visible window.
  bool visible(double t, double d) const { return t + d >= start_s && t <= end_s; }

 private:
  void clamp();
};

// "Nice" tick positions (1, 2, 5 x 10^k steps) inside [start, end], at most about `max_ticks`.
std::vector<double> niceTicks(double start, double end, int max_ticks);

}  // namespace mplan::gui
