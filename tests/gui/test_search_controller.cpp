// The background search: runs off the UI thread, reports progress, cancels, reports planner errors
// and no-feasible results; and the real search (planner or fallback) on a small job.
#include <QSignalSpy>
#include <QThread>
#include <QtTest/QtTest>
#include <atomic>
#include <chrono>
#include <thread>

#include "gui/models/search_controller.h"
#include "gui_test_util.h"

using namespace mplan;
using namespace mplan::gui;

namespace {

// Keeps every outcome the controller reports (copies, in order).
struct Outcomes {
  std::vector<SearchOutcome> got;
  explicit Outcomes(SearchController& c) {
    QObject::connect(&c, &SearchController::finished, [this](const SearchOutcome& o) { got.push_back(o); });
  }
  bool wait(int ms, size_t n = 1) {
    return QTest::qWaitFor([&] { return got.size() >= n; }, ms);
  }
};

}  // namespace

class TestSearch : public QObject {
  Q_OBJECT
 private slots:
  void runsOffTheUiThreadWithProgress() {
    SearchController c;
    std::atomic<bool> offThread{false};
    QThread* ui = QThread::currentThread();
    c.setSearchFunction([&](const Plan& job, const Calibration&, const SearchOptions& opt) -> Expected<SearchResult> {
      offThread = QThread::currentThread() != ui;
      for (int i = 1; i <= 10; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        opt.progress(i / 10.0);
      }
      SearchResult r;
      r.top.push_back({job, StepReport{}});
      r.stats.enumerated = 42;
      return r;
    });
    QSignalSpy progress(&c, &SearchController::progressChanged);
    Outcomes done(c);
    QVERIFY(c.start(gui_test::llamaJob(), shipped_calibration(), {}));
    QVERIFY(c.isRunning());
    QVERIFY(!c.start(gui_test::llamaJob(), shipped_calibration(), {}));  // one at a time
    QVERIFY(done.wait(10000));
    QVERIFY(offThread.load());
    QVERIFY(!c.isRunning());
    QVERIFY(progress.count() >= 3);  // start, some intermediate values, end
    QCOMPARE(progress.last().at(0).toInt(), 1000);
    const SearchOutcome& out = done.got.front();
    QVERIFY(out.ok);
    QCOMPARE(int(out.result.top.size()), 1);
    QCOMPARE(out.result.stats.enumerated, int64_t(42));
  }

  void cancelStopsTheSearch() {
    SearchController c;
    c.setSearchFunction([](const Plan&, const Calibration&, const SearchOptions& opt) -> Expected<SearchResult> {
      SearchResult r;
      for (int i = 0; i < 2000 && !opt.cancel->load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      r.cancelled = opt.cancel->load();
      return r;
    });
    Outcomes done(c);
    QVERIFY(c.start(gui_test::llamaJob(), shipped_calibration(), {}));
    QTest::qWait(50);
    c.cancel();
    QVERIFY(c.cancelRequested());
    QVERIFY(done.wait(5000));
    const SearchOutcome& out = done.got.front();
    QVERIFY(out.ok);
    QVERIFY(out.result.cancelled);
  }

  void errorsAndExceptionsBecomeMessages() {
    SearchController c;
    c.setSearchFunction([](const Plan&, const Calibration&, const SearchOptions&) -> Expected<SearchResult> {
      return Error("--fix tp=16 conflicts with --max tp=8");
    });
    Outcomes done(c);
    c.start(gui_test::llamaJob(), shipped_calibration(), {});
    QVERIFY(done.wait(5000));
    const SearchOutcome& out = done.got.front();
    QVERIFY(!out.ok);
    QVERIFY(out.error.contains("conflicts"));

    c.setSearchFunction([](const Plan&, const Calibration&, const SearchOptions&) -> Expected<SearchResult> {
      throw std::runtime_error("boom");
    });
    c.start(gui_test::llamaJob(), shipped_calibration(), {});
    QVERIFY(c.waitForFinished(5000));
    QCOMPARE(int(done.got.size()), 2);
    QVERIFY(!done.got.back().ok);
    QVERIFY(done.got.back().error.contains("boom"));
  }

  void destroyingWhileRunningCancels() {
    auto* c = new SearchController;
    std::atomic<bool> sawCancel{false};
    c->setSearchFunction([&](const Plan&, const Calibration&, const SearchOptions& opt) -> Expected<SearchResult> {
      while (!opt.cancel->load()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      sawCancel = true;
      return SearchResult{};
    });
    c->start(gui_test::llamaJob(), shipped_calibration(), {});
    QTest::qWait(20);
    delete c;  // must not hang or crash
    QVERIFY(sawCancel.load());
  }

  // A sweep: one search per GPU count with that count as the world size, progress over the whole sweep,
  // an error naming the count.
  void sweepSearchesEachCount() {
    SearchController c;
    std::vector<int> seen;
    c.setSearchFunction([&](const Plan& job, const Calibration&, const SearchOptions& opt) -> Expected<SearchResult> {
      seen.push_back(job.parallel.world_size);
      opt.progress(1.0);
      if (job.parallel.world_size == 512) return Error("too many");
      SearchResult r;
      r.top.push_back({job, StepReport{}});
      return r;
    });
    Outcomes done(c);
    QVERIFY(!c.startSweep(gui_test::llamaJob(), {}, shipped_calibration(), {}));
    QVERIFY(c.startSweep(gui_test::llamaJob(), {64, 128, 256}, shipped_calibration(), {}));
    QVERIFY(done.wait(10000));
    const SearchOutcome& out = done.got.front();
    QVERIFY(out.ok);
    QVERIFY(out.is_sweep);
    QCOMPARE(int(out.sweep.size()), 3);
    QCOMPARE(out.sweep[1].gpus, 128);
    QCOMPARE(out.sweep[1].result.top.front().plan.parallel.world_size, 128);
    QCOMPARE(seen, std::vector<int>({64, 128, 256}));
    QVERIFY(c.startSweep(gui_test::llamaJob(), {256, 512}, shipped_calibration(), {}));
    QVERIFY(done.wait(10000, 2));
    QVERIFY(!done.got[1].ok);
    QVERIFY2(done.got[1].error.contains("512 GPUs: too many"), qPrintable(done.got[1].error));
  }

  void realSearchOnASmallJob() {
    SearchController c;
    Outcomes done(c);
    SearchOptions opt;
    opt.top_k = 5;
    QVERIFY(c.start(gui_test::llamaJob(), shipped_calibration(), opt));
    QVERIFY(done.wait(300000));
    const SearchOutcome& out = done.got.front();
    QVERIFY2(out.ok, qPrintable(out.error));
    QVERIFY(!out.result.top.empty());
    QVERIFY(int(out.result.top.size()) <= 5);
    for (size_t i = 1; i < out.result.top.size(); ++i)
      QVERIFY(out.result.top[i - 1].report.step_time_s <= out.result.top[i].report.step_time_s * (1 + 1e-9));
    for (const auto& cand : out.result.top) {
      QVERIFY(cand.report.fits);
      QCOMPARE(cand.plan.parallel.world_size, 64);
    }
  }

  void noFeasibleLayoutGivesReasons() {
    SearchController c;
    Outcomes done(c);
    Plan job = gui_test::llamaJob(1, 8, 4096);
    job.model = model_preset("llama3.1-405b").value();  // 405B on one GPU fits nowhere
    QVERIFY(c.start(job, shipped_calibration(), {}));
    QVERIFY(done.wait(300000));
    const SearchOutcome& out = done.got.front();
    QVERIFY2(out.ok, qPrintable(out.error));
    QVERIFY(out.result.top.empty());
    QVERIFY(!out.result.top_rejection_reasons.empty());
  }
};

QTEST_GUILESS_MAIN(TestSearch)
#include "test_search_controller.moc"
