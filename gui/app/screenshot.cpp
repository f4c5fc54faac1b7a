// `mplan-gui --screenshot DIR` (see screenshot.h).
#include "gui/app/screenshot.h"

#include <QCoreApplication>
#include <QDir>
#include <QEventLoop>
#include <QPixmap>
#include <QTemporaryDir>
#include <QTimer>

#include "gui/app/inputs_panel.h"
#include "gui/app/main_window.h"
#include "gui/models/demo_runs.h"
#include "gui/models/format.h"
#include "gui/widgets/timeline_view.h"

namespace mplan::gui {

void settleEvents(int ms) {
  QEventLoop loop;
  QTimer::singleShot(ms, &loop, &QEventLoop::quit);
  loop.exec();
  QCoreApplication::sendPostedEvents();
  QCoreApplication::processEvents();
}

ScreenshotResult takeScreenshots(MainWindow& w, const ScreenshotOptions& opt) {
  ScreenshotResult res;
  if (!QDir().mkpath(opt.dir)) {
    res.exit_code = 2;
    res.message = "cannot create the directory " + opt.dir;
    return res;
  }
  w.resize(opt.size);
  w.show();
  settleEvents();
  auto shot = [&](MainWindow::Tab tab, const QString& name) {
    if (!opt.views.isEmpty() && !opt.views.contains(name)) return;
    w.showTab(tab);
    settleEvents();
    QString path = QDir(opt.dir).filePath(opt.prefix + name + ".png");
    if (w.grab().save(path))
      res.files << path;
    else
      res.message += "could not write " + path + "\n";
  };
  w.inputsPanel()->setInputs(opt.inputs);
  if (!opt.plan_file.isEmpty()) {
    if (!w.openPlanFile(opt.plan_file)) {
      res.exit_code = 2;
      res.message = w.bannerText();
      return res;
    }
  } else if (!w.startSearch()) {
    res.exit_code = 2;
    res.message = w.bannerText();
    shot(MainWindow::ResultsTab, "results");
    return res;
  }
  if (!w.searchController()->waitForFinished(opt.timeout_ms)) {
    w.searchController()->cancel();
    w.searchController()->waitForFinished(60000);
  }
  settleEvents();
  if (w.resultsModel()->rowCount() == 0) {
    res.exit_code = 1;
    res.message = w.bannerText().isEmpty() ? QString("the search found no layout") : w.bannerText();
    shot(MainWindow::ResultsTab, "results");
    return res;
  }
  w.selectRanks({0});
  if (const Candidate* c = w.currentPlan())
    res.best = QString("%1: step %2, MFU %3, peak %4")
                   .arg(layoutLabel(c->plan.parallel), formatTime(c->report.step_time_s), formatPercent(c->report.mfu),
                        formatGiB(c->report.peak_memory_gib));
  w.waitForBackgroundWork(60000);
  shot(MainWindow::ResultsTab, "results");
  shot(MainWindow::TimelineTab, "timeline");
  // the start of the step up close: warm-up bubbles, block labels
  const TimelineData& tl = w.timelineView()->timeline();
  w.timelineView()->showRange(0, std::max(tl.step_time_s, tl.pipeline_end_s) * opt.zoom_fraction);
  shot(MainWindow::TimelineTab, "timeline-zoom");
  w.timelineView()->showAll();
  shot(MainWindow::MemoryTab, "memory");
  std::vector<int> ranks;
  for (int i = 0; i < std::min(opt.compare, w.resultsModel()->rowCount()); ++i) ranks.push_back(i);
  w.selectRanks(ranks);
  w.waitForBackgroundWork(60000);
  shot(MainWindow::BreakdownTab, "breakdown");
  w.selectRanks({0});

  QTemporaryDir tmp;
  QString db = opt.runs_db;
  if (db.isEmpty()) {
    db = tmp.filePath("demo-runs.db");
    Status st = writeDemoRuns(db.toStdString());
    if (!st) res.message += "demo runs: " + QString::fromStdString(st.error().message()) + "\n";
  }
  w.openRunsDatabase(db);
  shot(MainWindow::RunsTab, "runs");
  return res;
}

}  // namespace mplan::gui
