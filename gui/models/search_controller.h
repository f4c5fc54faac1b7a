// Runs a planner search off the UI thread (QtConcurrent) with progress and cancellation, and hands
// the outcome back on the thread that owns the controller. No widgets: tested headless.
#pragma once
#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QTimer>
#include <atomic>
#include <memory>

#include "gui/models/search_backend.h"
#include "planner/scaling.h"

namespace mplan::gui {

struct SearchOutcome {
  bool ok = false;
  QString error;        // when !ok: what went wrong (input problems, planner error)
  SearchResult result;  // when ok (may be empty: then result.top_rejection_reasons says why)
  Plan job;
  Calibration calibration;
  // A sweep (startSweep): one search per GPU count, in order; `result` is then empty. On an error the
  // counts searched so far stay here.
  bool is_sweep = false;
  std::vector<ScalePoint> sweep;
};

class SearchController : public QObject {
  Q_OBJECT
 public:
  explicit SearchController(QObject* parent = nullptr);
  ~SearchController() override;  // cancels a running search and waits for it

  // Replaces the search (tests inject fakes); default: defaultSearchFunction().
  void setSearchFunction(SearchFunction f) { search_ = std::move(f); }
  // Starts a search; false when one is already running. `opt.progress` and `opt.cancel` are set
  // by the controller.
  bool start(const Plan& job, const Calibration& cal, SearchOptions opt);
  // The same search for every GPU count of `gpus` (job.parallel.world_size replaced), one after the other,
  // progress over the whole sweep; cancelling keeps the counts done. False when running or `gpus` is empty.
  bool startSweep(const Plan& job, const std::vector<int>& gpus, const Calibration& cal, SearchOptions opt);
  void cancel();
  bool isRunning() const { return running_; }
  bool cancelRequested() const { return cancel_.load(); }
  // Fraction done (0..1) as last reported by the planner.
  double progress() const { return progress_.load(); }
  // Blocks (processing events) until the running search finished; for tests and --screenshot.
  bool waitForFinished(int timeout_ms);

 signals:
  void started();
  void progressChanged(int permille);
  void finished(const mplan::gui::SearchOutcome& outcome);

 private:
  void onFinished();
  bool launch(const Plan& job, const Calibration& cal, SearchOptions opt, const std::vector<int>& sweep);

  SearchFunction search_;
  std::atomic<bool> cancel_{false};
  std::atomic<double> progress_{0.0};
  QFutureWatcher<SearchOutcome> watcher_;
  QTimer poll_;
  int last_permille_ = -1;
  bool running_ = false;
};

}  // namespace mplan::gui
