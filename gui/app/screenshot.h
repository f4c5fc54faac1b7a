// `mplan-gui --screenshot DIR`: runs a search headless (or opens a plan file), opens each view with
// the best plan and writes one PNG per view (results, timeline, timeline-zoom, breakdown, memory,
// runs) to DIR, named PREFIX + view + ".png", optionally only some views. Shared with the end-to-end test.
#pragma once
#include <QSize>
#include <QString>
#include <QStringList>

#include "gui/models/job_inputs.h"

namespace mplan::gui {

class MainWindow;

struct ScreenshotOptions {
  QString dir;
  JobInputs inputs;
  QString runs_db;              // empty: a synthetic demo database (tagged "synthetic") in a temporary dir
  QSize size{1600, 1000};       // window size in pixels
  int compare = 4;              // plans side by side in the breakdown view
  double zoom_fraction = 0.15;  // timeline-zoom.png shows this first part of the step
  int timeout_ms = 600000;
  QString plan_file;  // non-empty: show this plan file instead of searching
  QString prefix;     // file names: PREFIX + view + ".png"
  QStringList views;  // empty: all of them
};

struct ScreenshotResult {
  int exit_code = 0;  // 0 ok, 1 search found nothing (results view still written), 2 bad input
  QString message;    // what went wrong, for stderr
  QStringList files;  // PNGs written
  QString best;       // the best plan's layout, step time and MFU
};

// Drives `window` (shown, sized) through the views; each view is grabbed to DIR/<view>.png.
ScreenshotResult takeScreenshots(MainWindow& window, const ScreenshotOptions& opt);
// Lets pending layout, paint and queued signals run (used between steps).
void settleEvents(int ms = 50);

}  // namespace mplan::gui
