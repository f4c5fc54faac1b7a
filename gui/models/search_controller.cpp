// Runs a planner search off the UI thread (see search_controller.h).
#include "gui/models/search_controller.h"

#include <QEventLoop>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>
#include <exception>

namespace mplan::gui {

SearchController::SearchController(QObject* parent) : QObject(parent), search_(defaultSearchFunction()) {
  poll_.setInterval(50);
  connect(&poll_, &QTimer::timeout, this, [this] {
    int pm = int(std::lround(std::clamp(progress_.load(), 0.0, 1.0) * 1000));
    if (pm != last_permille_) {
      last_permille_ = pm;
      emit progressChanged(pm);
    }
  });
  connect(&watcher_, &QFutureWatcher<SearchOutcome>::finished, this, &SearchController::onFinished);
}

SearchController::~SearchController() {
  cancel_ = true;
  watcher_.waitForFinished();
}

bool SearchController::start(const Plan& job, const Calibration& cal, SearchOptions opt) {
  return launch(job, cal, std::move(opt), {});
}

bool SearchController::startSweep(const Plan& job, const std::vector<int>& gpus, const Calibration& cal, SearchOptions opt) {
  if (gpus.empty()) return false;
  return launch(job, cal, std::move(opt), gpus);
}

namespace {

// One search, or one per GPU count of `sweep`, into `out` (errors as text, exceptions caught).
void runSearches(const SearchFunction& fn, const Plan& job, const Calibration& cal, const SearchOptions& opt,
                 const std::vector<int>& sweep, SearchOutcome& out) {
  if (sweep.empty()) {
    auto r = fn(job, cal, opt);
    if (r) {
      out.ok = true;
      out.result = std::move(r).value();
    } else {
      out.error = QString::fromStdString(r.error().message());
    }
    return;
  }
  out.is_sweep = true;
  for (size_t i = 0; i < sweep.size(); ++i) {
    if (opt.cancel && opt.cancel->load()) {
      out.result.cancelled = true;
      break;
    }
    Plan j = job;
    j.parallel.world_size = sweep[i];
    SearchOptions o = opt;
    const double n = double(sweep.size());
    o.progress = [&opt, i, n](double f) {
      if (opt.progress) opt.progress((double(i) + f) / n);
    };
    auto r = fn(j, cal, o);
    if (!r) {
      out.error = QString("%1 GPUs: %2").arg(sweep[i]).arg(QString::fromStdString(r.error().message()));
      return;
    }
    out.sweep.push_back({sweep[i], std::move(r).value()});
  }
  out.ok = true;
}

}  // namespace

bool SearchController::launch(const Plan& job, const Calibration& cal, SearchOptions opt, const std::vector<int>& sweep) {
  if (running_) return false;
  running_ = true;
  cancel_ = false;
  progress_ = 0;
  last_permille_ = -1;
  opt.cancel = &cancel_;
  opt.progress = [this](double f) {
    // called from planner threads: keep the maximum (threads report out of order)
    double cur = progress_.load();
    while (f > cur && !progress_.compare_exchange_weak(cur, f)) {
    }
  };
  SearchFunction fn = search_;
  watcher_.setFuture(QtConcurrent::run([fn, job, cal, opt, sweep]() {
    SearchOutcome out;
    out.job = job;
    out.calibration = cal;
    try {
      runSearches(fn, job, cal, opt, sweep, out);
    } catch (const std::exception& e) {
      out.error = QString("The search failed: ") + e.what();
    } catch (...) {
      out.error = "The search failed with an unknown error.";
    }
    return out;
  }));
  poll_.start();
  emit started();
  emit progressChanged(0);
  return true;
}

void SearchController::cancel() {
  if (running_) cancel_ = true;
}

bool SearchController::waitForFinished(int timeout_ms) {
  if (!running_) return true;
  QEventLoop loop;
  connect(this, &SearchController::finished, &loop, &QEventLoop::quit);
  QTimer::singleShot(timeout_ms, &loop, &QEventLoop::quit);
  loop.exec();
  return !running_;
}

void SearchController::onFinished() {
  poll_.stop();
  running_ = false;
  SearchOutcome out = watcher_.result();
  progress_ = 1.0;
  emit progressChanged(1000);
  emit finished(out);
}

}  // namespace mplan::gui
