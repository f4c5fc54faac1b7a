// The main window driven as a user drives it, offscreen, with a fake search (fixed layouts of the
// job it is given, simulated for real) where the planner is not the subject:
//  - filter, then search: the views never show the previous job's plan (issue 20, item 1);
//  - cancel keeps the previous results, says so without an error, progress not at 100% (item 2);
//  - at 1024x700 every tab and chart is inside the window (item 6);
//  - inputs changed after a search mark the results out of date; Enter, Ctrl+Enter and F5 start a
//    search; 0 GPUs is reported, not silently reverted; messages name the panel's fields, not CLI
//    flags (item 7).
#include <QAction>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QThread>
#include <QtCharts/QScatterSeries>
#include <QtTest/QtTest>
#include <atomic>

#include "gui/app/inputs_panel.h"
#include "gui/app/main_window.h"
#include "gui/app/runs_panel.h"
#include "gui/models/demo_runs.h"
#include "gui/widgets/breakdown_chart.h"
#include "gui/widgets/memory_chart.h"
#include "gui/widgets/runs_charts.h"
#include "gui/widgets/scaling_chart.h"
#include "gui/widgets/timeline_view.h"
#include "gui_test_util.h"

using namespace mplan;
using namespace mplan::gui;

namespace {

// A search that returns tp1 pp1, tp2 pp1 and tp1 pp2 of the job it is given, best first by step time.
SearchFunction threeLayouts(std::atomic<int>* calls = nullptr) {
  return [calls](const Plan& job, const Calibration&, const SearchOptions&) -> Expected<SearchResult> {
    if (calls) ++*calls;
    SearchResult r;
    for (auto [tp, pp] : {std::pair{1, 1}, {2, 1}, {1, 2}}) r.top.push_back(gui_test::candidateOf(job, tp, pp));
    std::sort(r.top.begin(), r.top.end(),
              [](const Candidate& a, const Candidate& b) { return a.report.step_time_s < b.report.step_time_s; });
    r.stats.enumerated = 3;
    r.stats.simulated = 3;
    r.stats.fits = 3;
    return r;
  };
}

// A search that runs until it is cancelled and then has found nothing.
SearchFunction untilCancelled() {
  return [](const Plan&, const Calibration&, const SearchOptions& opt) -> Expected<SearchResult> {
    SearchResult r;
    while (!opt.cancel->load()) QThread::msleep(2);
    r.cancelled = true;
    return r;
  };
}

// Shows the window with a search that counts its calls; the GPUs field has the focus.
QSpinBox* showWithCountingSearch(MainWindow& w, std::atomic<int>& calls) {
  w.searchController()->setSearchFunction(threeLayouts(&calls));
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) return nullptr;
  QSpinBox* gpus = w.inputsPanel()->gpusBox();
  gpus->setFocus();
  return gpus;
}

bool searchAndWait(MainWindow& w, int gpus) {
  JobInputs in;
  in.gpus = gpus;
  w.inputsPanel()->setInputs(in);
  if (!w.startSearch()) return false;
  return w.searchController()->waitForFinished(120000) && w.waitForBackgroundWork(120000);
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT
 private slots:
  void filterThenSearchNeverShowsAStalePlan() {
    MainWindow w;
    w.searchController()->setSearchFunction(threeLayouts());
    QVERIFY(searchAndWait(w, 64));
    QVERIFY(w.currentPlan());
    QVERIFY(!w.timelineView()->timeline().empty());
    QVERIFY(w.memoryModel()->rowCount() > 0);
    w.filterEdit()->setText("tp=8");  // matches no result of either job
    QCOMPARE(w.resultsProxy()->rowCount(), 0);

    QVERIFY(searchAndWait(w, 128));
    QCOMPARE(w.resultsModel()->rowCount(), 3);
    QCOMPARE(w.resultsProxy()->rowCount(), 0);
    // nothing of the 64-GPU job may remain in any view
    QVERIFY(!w.currentPlan());
    QVERIFY(w.timelineView()->timeline().empty());
    QCOMPARE(w.memoryModel()->rowCount(), 0);
    QCOMPARE(w.breakdownModel()->rowCount(), 0);
    QVERIFY2(w.detailsText().contains("filter"), qPrintable(w.detailsText()));
    QVERIFY(!w.detailsText().contains("step time"));

    // clearing the filter shows the new job's best plan
    w.filterEdit()->clear();
    QVERIFY(w.waitForBackgroundWork(120000));
    QVERIFY(w.currentPlan());
    QCOMPARE(w.currentPlan()->plan.parallel.world_size, 128);
    QCOMPARE(w.currentPlan()->plan.parallel.tp * w.currentPlan()->plan.parallel.pp,
             w.resultsModel()->candidate(0).plan.parallel.tp * w.resultsModel()->candidate(0).plan.parallel.pp);
    QVERIFY(w.timelineView()->title().contains("128"));
  }

  void filterHidingTheBestSelectsTheBestShown() {
    MainWindow w;
    w.searchController()->setSearchFunction(threeLayouts());
    QVERIFY(searchAndWait(w, 64));
    const int bestTp = w.resultsModel()->candidate(0).plan.parallel.tp;
    const int bestPp = w.resultsModel()->candidate(0).plan.parallel.pp;
    // hide the best layout only
    w.filterEdit()->setText(bestTp == 1 && bestPp == 1 ? "pp!=1 tp=1" : QString("tp!=%1").arg(bestTp));
    QVERIFY(w.resultsProxy()->rowCount() > 0);
    QVERIFY(searchAndWait(w, 128));
    QVERIFY(w.currentPlan());
    QCOMPARE(w.currentPlan()->plan.parallel.world_size, 128);
    QCOMPARE(w.resultsView()->selectionModel()->selectedRows().size(), 1);
    int shown = w.resultsView()->selectionModel()->selectedRows().front().data(ResultsModel::CandidateRole).toInt();
    QCOMPARE(w.currentPlan()->plan.parallel.tp, w.resultsModel()->candidate(shown).plan.parallel.tp);
    QCOMPARE(w.currentPlan()->plan.parallel.pp, w.resultsModel()->candidate(shown).plan.parallel.pp);
    QVERIFY(w.timelineView()->title().contains("128"));
  }

  void cancelKeepsThePreviousResults() {
    MainWindow w;
    w.searchController()->setSearchFunction(threeLayouts());
    QVERIFY(searchAndWait(w, 64));
    const std::string before = plan_to_json(w.currentPlan()->plan).dump();
    w.searchController()->setSearchFunction(untilCancelled());
    QVERIFY(w.startSearch());
    QTest::qWait(30);
    QTest::mouseClick(w.inputsPanel()->cancelButton(), Qt::LeftButton);
    QVERIFY(w.searchController()->waitForFinished(10000));
    QCOMPARE(w.resultsModel()->rowCount(), 3);
    QVERIFY(w.currentPlan());
    QCOMPARE(plan_to_json(w.currentPlan()->plan).dump(), before);
    QVERIFY(!w.timelineView()->timeline().empty());
    QVERIFY2(w.bannerText().contains("cancelled"), qPrintable(w.bannerText()));
    QVERIFY2(w.bannerText().contains("previous"), qPrintable(w.bannerText()));
    QVERIFY(!w.bannerIsError());
    QVERIFY(w.inputsPanel()->progressBar()->value() < 1000);
    QVERIFY(w.inputsPanel()->searchButton()->isEnabled());
  }

  void failedSearchKeepsThePreviousResults() {
    MainWindow w;
    w.searchController()->setSearchFunction(threeLayouts());
    QVERIFY(searchAndWait(w, 64));
    w.searchController()->setSearchFunction(
        [](const Plan&, const Calibration&, const SearchOptions&) -> Expected<SearchResult> { return Error("boom"); });
    QVERIFY(w.startSearch());
    QVERIFY(w.searchController()->waitForFinished(10000));
    QCOMPARE(w.resultsModel()->rowCount(), 3);
    QVERIFY(w.currentPlan());
    QVERIFY(w.bannerIsError());
    QVERIFY(w.bannerText().contains("boom"));
    QVERIFY(w.inputsPanel()->progressBar()->value() < 1000);
  }

  void at1024x700EveryChartIsVisible() {
    MainWindow w;
    w.searchController()->setSearchFunction(threeLayouts());
    w.resize(1024, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY2(w.minimumSizeHint().width() <= 1024, qPrintable(QString::number(w.minimumSizeHint().width())));
    QCOMPARE(w.width(), 1024);
    QCOMPARE(w.height(), 700);
    QVERIFY(searchAndWait(w, 64));
    QTemporaryDir dir;
    const QString db = dir.filePath("runs.db");
    QVERIFY(writeDemoRuns(db.toStdString()).ok());
    QVERIFY(w.openRunsDatabase(db));
    // every tab's title is on screen
    QTabBar* bar = w.tabs()->tabBar();
    for (int i = 0; i < bar->count(); ++i) QVERIFY2(bar->rect().contains(bar->tabRect(i)), qPrintable(bar->tabText(i)));
    auto inside = [&](QWidget* chart, int minW, int minH) {
      QRect r(chart->mapTo(&w, QPoint(0, 0)), chart->size());
      return chart->isVisible() && w.rect().contains(r) && r.width() >= minW && r.height() >= minH;
    };
    struct View {
      MainWindow::Tab tab;
      QWidget* widget;
    };
    std::vector<View> views = {{MainWindow::TimelineTab, w.timelineView()},
                               {MainWindow::BreakdownTab, w.breakdownChart()},
                               {MainWindow::MemoryTab, w.memoryChart()},
                               {MainWindow::RunsTab, w.runsPanel()->historyChart()},
                               {MainWindow::RunsTab, w.runsPanel()->scatterChart()},
                               {MainWindow::RunsTab, w.runsPanel()->opsChart()},
                               {MainWindow::ScalingTab, w.scalingChart()}};
    for (const View& v : views) {
      w.showTab(v.tab);
      QTest::qWait(20);
      QVERIFY2(inside(v.widget, 250, 150), v.widget->metaObject()->className());
    }
    w.showTab(MainWindow::ResultsTab);
    QTest::qWait(20);
    QVERIFY(inside(w.resultsView(), 400, 120));
  }

  void changedInputsMarkTheResultsOutOfDate() {
    MainWindow w;
    w.searchController()->setSearchFunction(threeLayouts());
    QVERIFY(!w.resultsOutOfDate());
    QVERIFY(searchAndWait(w, 64));
    QVERIFY(!w.resultsOutOfDate());
    w.inputsPanel()->gpusBox()->setValue(128);
    QVERIFY(w.resultsOutOfDate());
    QVERIFY2(w.outOfDateText().contains("changed"), qPrintable(w.outOfDateText()));
    w.inputsPanel()->gpusBox()->setValue(64);  // back to what was searched
    QVERIFY(!w.resultsOutOfDate());
    w.inputsPanel()->gpusBox()->setValue(128);
    QVERIFY(searchAndWait(w, 128));
    QVERIFY(!w.resultsOutOfDate());
  }

  void enterAndShortcutsStartASearch() {
    MainWindow w;
    std::atomic<int> calls{0};
    QSpinBox* gpus = showWithCountingSearch(w, calls);
    QVERIFY(gpus);
    QTest::keyClick(gpus, Qt::Key_Return);
    QVERIFY(w.searchController()->waitForFinished(120000));
    QCOMPARE(calls.load(), 1);
    QVERIFY(w.searchAction()->shortcuts().contains(QKeySequence("Ctrl+Return")));
    QVERIFY(w.searchAction()->shortcuts().contains(QKeySequence(Qt::Key_F5)));
    w.searchAction()->trigger();
    QVERIFY(w.searchController()->waitForFinished(120000));
    QCOMPARE(calls.load(), 2);
    QVERIFY(w.cancelAction());
  }

  // The Scaling tab: a sweep over GPU counts plots each count's best; one click on a row shows that
  // count's results (and sets the GPUs field); bad counts are refused in the banner.
  void sweepShowsEachCountOneClickAway() {
    MainWindow w;
    w.searchController()->setSearchFunction(threeLayouts());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.sweepGpusEdit()->setText("4096..256");
    QVERIFY(!w.startSweep());
    QVERIFY2(w.bannerText().contains("inverted"), qPrintable(w.bannerText()));
    w.sweepGpusEdit()->setText("32..128");
    w.sweepTokensEdit()->setText("1T");
    QVERIFY(w.startSweep());
    QVERIFY(w.searchController()->waitForFinished(120000));
    QCOMPARE(w.scalingModel()->rowCount(), 3);
    QCOMPARE(w.scalingModel()->index(2, ScalingModel::Gpus).data().toInt(), 128);
    QVERIFY(w.scalingModel()->index(2, ScalingModel::ExpectedDays).data(ScalingModel::ValueRole).isValid());
    QVERIFY(w.scalingChart()->throughputPoints() != nullptr);
    QCOMPARE(w.scalingChart()->throughputPoints()->count(), 3);
    QVERIFY(w.showSweepRow(1));
    QVERIFY(w.waitForBackgroundWork(120000));
    QCOMPARE(w.tabs()->currentIndex(), int(MainWindow::ResultsTab));
    QCOMPARE(w.resultsModel()->rowCount(), 3);
    QVERIFY(w.currentPlan());
    QCOMPARE(w.currentPlan()->plan.parallel.world_size, 64);
    QCOMPARE(w.inputsPanel()->inputs().gpus, 64);
    QVERIFY(!w.resultsOutOfDate());
    w.sweepTokensEdit()->setText("lots");
    QVERIFY(!w.startSweep());
    QVERIFY2(w.bannerText().contains("Tokens"), qPrintable(w.bannerText()));
  }

  void zeroGpusIsReportedNotReverted() {
    MainWindow w;
    std::atomic<int> calls{0};
    QSpinBox* gpus = showWithCountingSearch(w, calls);
    QVERIFY(gpus);
    gpus->selectAll();
    QTest::keyClicks(gpus, "0");
    QTest::keyClick(gpus, Qt::Key_Return);
    QCOMPARE(calls.load(), 0);
    QVERIFY2(w.bannerText().contains("GPUs must be at least 1"), qPrintable(w.bannerText()));
    QVERIFY(w.bannerIsError());
  }

  void messagesNameTheFieldsNotCliFlags() {
    MainWindow w;  // the real search: its limit check is the planner's
    JobInputs in;
    in.fix = "tp=8";
    in.max = "tp=4";
    w.inputsPanel()->setInputs(in);
    if (w.startSearch()) QVERIFY(w.searchController()->waitForFinished(120000));
    QVERIFY2(w.bannerText().contains("Fix tp=8 conflicts with Max tp=4"), qPrintable(w.bannerText()));
    QVERIFY2(!w.bannerText().contains("--"), qPrintable(w.bannerText()));
    in = JobInputs{};
    in.model = "llama3-8";
    w.inputsPanel()->setInputs(in);
    QVERIFY(!w.startSearch());
    QVERIFY2(w.bannerText().contains("Model 'llama3-8'") && w.bannerText().contains("did you mean"), qPrintable(w.bannerText()));
    QVERIFY2(!w.bannerText().contains("--model"), qPrintable(w.bannerText()));
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
