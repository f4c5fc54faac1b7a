// End to end: the main window runs a real small search (llama3-8b on 64 H100, gbs 256, seq 4096),
// selects the best plan, grabs each view to PNG and checks the images are not blank and the expected
// elements exist; exports; and bad input (unreadable files, no feasible layout) shown, not crashed.
#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtCharts/QBarSet>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtTest/QtTest>

#include "gui/app/inputs_panel.h"
#include "gui/app/main_window.h"
#include "gui/app/runs_panel.h"
#include "gui/app/screenshot.h"
#include "gui/widgets/breakdown_chart.h"
#include "gui/widgets/memory_chart.h"
#include "gui/widgets/palette.h"
#include "gui/widgets/runs_charts.h"
#include "gui/widgets/timeline_view.h"
#include "image_checks.h"

using namespace mplan;
using namespace mplan::gui;

class TestEndToEnd : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  static void checkImage(const QString& path, double minForeground) {
    QImage img(path);
    QVERIFY2(!img.isNull(), qPrintable(path));
    QVERIFY(img.width() >= 1000 && img.height() >= 700);
    int colors = gui_test::distinctColors(img);
    double fg = gui_test::foregroundFraction(img);
    QVERIFY2(colors > 60, qPrintable(QString("%1: only %2 colours").arg(path).arg(colors)));
    QVERIFY2(fg > minForeground, qPrintable(QString("%1: %2 foreground").arg(path).arg(fg)));
  }

 private slots:
  void searchSelectAndGrabEveryView() {
    MainWindow w;
    ScreenshotOptions opt;
    // MPLAN_GUI_SCREENSHOTS=DIR keeps the PNGs (e.g. to look at them); default: a temporary dir
    opt.dir = qEnvironmentVariableIsEmpty("MPLAN_GUI_SCREENSHOTS") ? dir_.filePath("shots")
                                                                   : qEnvironmentVariable("MPLAN_GUI_SCREENSHOTS");
    opt.inputs.model = "llama3-8b";
    opt.inputs.cluster = "dgx-h100";
    opt.inputs.gpus = 64;
    opt.inputs.global_batch = 256;
    opt.inputs.seq_length = 4096;
    opt.size = QSize(1400, 900);
    ScreenshotResult r = takeScreenshots(w, opt);
    QVERIFY2(r.exit_code == 0, qPrintable(r.message));
    QCOMPARE(r.files.size(), 6);
    for (const char* v : {"results", "timeline", "timeline-zoom", "breakdown", "memory", "runs"})
      QVERIFY2(QFile::exists(QDir(opt.dir).filePath(QString(v) + ".png")), v);

    // results: rows, the best one selected, search finished
    QVERIFY(w.resultsModel()->rowCount() > 0);
    QVERIFY(w.currentPlan());
    QCOMPARE(w.inputsPanel()->progressBar()->value(), 1000);
    QVERIFY(w.inputsPanel()->searchButton()->isEnabled());
    QVERIFY(!w.inputsPanel()->cancelButton()->isEnabled());
    QCOMPARE(w.currentPlan()->plan.parallel.world_size, 64);
    QVERIFY(w.detailsText().contains("step time"));
    checkImage(QDir(opt.dir).filePath("results.png"), 0.05);

    // timeline: a compute lane per stage with F and B of every micro-batch, colours on screen
    const TimelineData& d = w.timelineView()->timeline();
    QCOMPARE(d.stages, w.currentPlan()->plan.parallel.pp);
    QVERIFY(d.blockCount() >= 2 * d.microbatches);
    QImage tl(QDir(opt.dir).filePath("timeline.png"));
    checkImage(QDir(opt.dir).filePath("timeline.png"), 0.02);
    QVERIFY(gui_test::countColor(tl, phaseColor('F'), 3) > 300);
    QVERIFY(gui_test::countColor(tl, phaseColor('B'), 3) > 300);

    // memory: a bar per stage and the capacity line at the GPU's 80 GiB
    QVERIFY(w.memoryChart()->barSeries());
    QCOMPARE(w.memoryChart()->capacitySeries()->at(0).y(), 80.0);
    QImage mem(QDir(opt.dir).filePath("memory.png"));
    checkImage(QDir(opt.dir).filePath("memory.png"), 0.05);
    QVERIFY(gui_test::countColor(mem, memoryKindColor(0), 3) > 300);  // weights
    QVERIFY(gui_test::countColor(mem, capacityColor(), 40) > 100);

    // breakdown: the top plans side by side (the screenshot compared 4) with MFU points
    int compared = std::min(4, w.resultsModel()->rowCount());
    std::vector<int> ranks;
    ranks.reserve(size_t(compared));
    for (int i = 0; i < compared; ++i) ranks.push_back(i);
    w.selectRanks(ranks);
    QVERIFY(w.breakdownChart()->barSeries());
    QCOMPARE(w.breakdownChart()->barSeries()->barSets().front()->count(), compared);
    QCOMPARE(w.breakdownChart()->mfuSeries()->count(), compared);
    QImage bd(QDir(opt.dir).filePath("breakdown.png"));
    checkImage(QDir(opt.dir).filePath("breakdown.png"), 0.05);
    QVERIFY(gui_test::countColor(bd, componentColor(0), 3) > 1000);  // compute

    // runs: the synthetic database with its regressions marked
    QVERIFY(w.runsPanel()->runsModel()->rowCount() > 0);
    QVERIFY(w.runsPanel()->historyChart()->regressionSeries()->count() > 0);
    QVERIFY(w.runsPanel()->scatterChart()->pointCount() > 0);
    QVERIFY(w.runsPanel()->opsChart()->opCount() > 0);
    QImage runs(QDir(opt.dir).filePath("runs.png"));
    checkImage(QDir(opt.dir).filePath("runs.png"), 0.05);
    QVERIFY(gui_test::countColor(runs, regressionColor(), 10) > 50);

    // exports of the best plan
    w.selectRanks({0});
    QVERIFY(w.waitForBackgroundWork(60000));
    const QString planFile = dir_.filePath("best.plan.json");
    QVERIFY(w.savePlanTo(planFile));
    auto back = read_plan_file(planFile.toStdString());
    QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
    QCOMPARE(parallel_to_json(back->parallel), parallel_to_json(w.currentPlan()->plan.parallel));
    QCOMPARE(back->meta.value("written_by", ""), std::string("mplan-gui"));
    const QString trace = dir_.filePath("trace.json");
    QVERIFY(w.exportTraceTo(trace));
    QFile tf(trace);
    QVERIFY(tf.open(QIODevice::ReadOnly));
    QJsonParseError err;
    auto doc = QJsonDocument::fromJson(tf.readAll(), &err);
    QVERIFY2(err.error == QJsonParseError::NoError, qPrintable(err.errorString()));
    QString args = w.copyMegatronArgs();
    QVERIFY(args.contains("--tensor-model-parallel-size"));
    QCOMPARE(QApplication::clipboard()->text(), args);

    // filter the results table
    w.filterEdit()->setText("tp=1");
    for (int r = 0; r < w.resultsProxy()->rowCount(); ++r) QCOMPARE(w.resultsProxy()->index(r, 1).data().toInt(), 1);
    w.filterEdit()->clear();
    QCOMPARE(w.resultsProxy()->rowCount(), w.resultsModel()->rowCount());
  }

  void openSavedPlanFile() {
    MainWindow w;
    const QString planFile = dir_.filePath("best.plan.json");
    QVERIFY(QFile::exists(planFile));
    QVERIFY(w.openPlanFile(planFile));
    QVERIFY(w.waitForBackgroundWork(60000));
    QCOMPARE(w.resultsModel()->rowCount(), 1);
    QVERIFY(w.currentPlan());
    QVERIFY(!w.timelineView()->timeline().empty());
    QVERIFY(w.bannerText().contains("best.plan.json"));
  }

  void badInputIsShownNotCrashed() {
    MainWindow w;
    w.resize(1200, 800);
    // an unreadable model file
    JobInputs in;
    in.model = dir_.filePath("missing/config.json").toStdString();
    w.inputsPanel()->setInputs(in);
    QVERIFY(!w.startSearch());
    QVERIFY(w.bannerText().contains("missing/config.json"));
    QVERIFY(!w.searchController()->isRunning());
    // a model file that is not JSON
    const QString junk = dir_.filePath("junk.json");
    QFile f(junk);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{ not json at all");
    f.close();
    in.model = junk.toStdString();
    w.inputsPanel()->setInputs(in);
    QVERIFY(!w.startSearch());
    QVERIFY(w.bannerText().contains("junk.json"));
    // bad constraints
    in = JobInputs{};
    in.fix = "tp=eight";
    w.inputsPanel()->setInputs(in);
    QVERIFY(!w.startSearch());
    QVERIFY(w.bannerText().contains("tp=eight"));
    // a plan file that is not a plan, a runs database that is not one, one that does not exist
    QVERIFY(!w.openPlanFile(junk));
    QVERIFY(w.bannerText().contains("junk.json"));
    QVERIFY(!w.openRunsDatabase(junk));
    QVERIFY(!w.runsPanel()->message().isEmpty());
    QVERIFY(!w.bannerText().isEmpty());
    QVERIFY(!w.openRunsDatabase(dir_.filePath("no-such.db")));
    QVERIFY(w.runsPanel()->message().contains("no-such.db"));
    QVERIFY(!QFile::exists(dir_.filePath("no-such.db")));  // not created by looking
    // exports without a plan
    QVERIFY(!w.savePlanTo(dir_.filePath("x.json")));
    QVERIFY(w.copyMegatronArgs().isEmpty());
    QVERIFY(w.grab().toImage().width() > 0);
  }

  void noFeasibleLayoutShowsReasons() {
    MainWindow w;
    JobInputs in;
    in.model = "llama3.1-405b";
    in.gpus = 1;
    in.global_batch = 8;
    w.inputsPanel()->setInputs(in);
    QVERIFY(w.startSearch());
    QVERIFY(w.searchController()->waitForFinished(300000));
    QCOMPARE(w.resultsModel()->rowCount(), 0);
    QVERIFY2(w.bannerText().contains("No layout"), qPrintable(w.bannerText()));
    QVERIFY(w.bannerText().contains("•"));  // at least one reason listed
    QVERIFY(w.detailsText().contains("No layout"));
    QVERIFY(w.timelineView()->timeline().empty());
  }

  void cancelKeepsTheWindowAlive() {
    MainWindow w;
    w.searchController()->setSearchFunction(
        [](const Plan&, const Calibration&, const SearchOptions& opt) -> Expected<SearchResult> {
          SearchResult r;
          while (!opt.cancel->load()) QThread::msleep(2);
          r.cancelled = true;
          return r;
        });
    QVERIFY(w.startSearch());
    QVERIFY(!w.inputsPanel()->searchButton()->isEnabled());
    QVERIFY(w.inputsPanel()->cancelButton()->isEnabled());
    QTest::qWait(30);  // the event loop keeps running while the search does
    QTest::mouseClick(w.inputsPanel()->cancelButton(), Qt::LeftButton);
    QVERIFY(w.searchController()->waitForFinished(5000));
    QVERIFY(w.inputsPanel()->searchButton()->isEnabled());
    QVERIFY(w.bannerText().contains("cancelled"));
  }
};

QTEST_MAIN(TestEndToEnd)
#include "test_end_to_end.moc"
