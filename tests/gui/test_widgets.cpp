// Widgets on their own: the timeline (lanes, tooltips, Ctrl+wheel zoom, middle-drag pan, keys, painting; its
// navigation in test_timeline_view.cpp) and the
// charts (series built from their models: bars, MFU points, capacity line, runs history, scatter, ops).
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtTest/QtTest>

#include "gui/models/demo_runs.h"
#include "gui/widgets/breakdown_chart.h"
#include "gui/widgets/memory_chart.h"
#include "gui/widgets/palette.h"
#include "gui/widgets/runs_charts.h"
#include "gui/widgets/timeline_view.h"
#include "gui_test_util.h"
#include "image_checks.h"

using namespace mplan;
using namespace mplan::gui;

namespace {

TimelineData pipelineTimeline() {
  auto c = gui_test::candidate(2, 4, 1);
  SimOptions o;
  o.trace = true;
  auto r = simulate(c.plan, default_cost_params(c.plan.cluster), o);
  if (!r) qFatal("simulate: %s", r.error().message().c_str());
  return buildTimeline(r.value());
}

}  // namespace

class TestWidgets : public QObject {
  Q_OBJECT
 private slots:
  void timelineLanesAndTooltips() {
    TimelineView v;
    v.resize(1200, 600);
    v.setTimeline(pipelineTimeline(), "tp2 pp4");
    v.resize(1200, v.sizeHint().height());
    QCOMPARE(v.maxVerticalOffset(), 0);  // every lane fits
    const TimelineData& d = v.timeline();
    for (int i = 0; i < int(d.lanes.size()); ++i) QCOMPARE(v.laneAt(v.laneRect(i).center().y()), i);
    QCOMPARE(v.laneAt(2), -1);
    // a tooltip over the first forward block of stage 1
    int li = d.computeLane(1);
    const TimelineBlock& f0 = d.lanes[size_t(li)].blocks.front();
    QCOMPARE(f0.phase, 'F');
    QPoint p(int(v.mapping().toPixel(f0.start_s + f0.dur_s / 2)), v.laneRect(li).center().y());
    QString tip = v.tooltipAt(p);
    QVERIFY2(tip.contains("micro-batch 0") && tip.contains("forward") && tip.contains("duration"), qPrintable(tip));
    // before it, stage 1 waits: a bubble
    QPoint early(int(v.mapping().toPixel(f0.start_s / 2)), p.y());
    QVERIFY(v.tooltipAt(early).contains("bubble"));
    QVERIFY(v.tooltipAt(QPoint(5, p.y())).isEmpty());  // header column
  }

  void timelineZoomPanKeys() {
    TimelineView v;
    v.resize(1200, 500);
    v.setTimeline(pipelineTimeline(), "tp2 pp4");
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    const double full = v.mapping().span();
    QPointF at(v.mapping().x0 + 300, v.laneRect(0).center().y());
    double tAt = v.mapping().toTime(at.x());
    QWheelEvent zoom(at, v.mapToGlobal(at), QPoint(), QPoint(0, 240), Qt::NoButton, Qt::ControlModifier, Qt::NoScrollPhase,
                     false);
    QApplication::sendEvent(&v, &zoom);
    QVERIFY(v.mapping().span() < full * 0.7);
    QVERIFY(qAbs(v.mapping().toTime(at.x()) - tAt) < 1e-9 * full + 1e-12);
    double start = v.mapping().start_s;
    QTest::mousePress(&v, Qt::MiddleButton, Qt::NoModifier, at.toPoint());
    QTest::mouseMove(&v, (at - QPointF(200, 0)).toPoint());
    QTest::mouseRelease(&v, Qt::MiddleButton, Qt::NoModifier, (at - QPointF(200, 0)).toPoint());
    QVERIFY(v.mapping().start_s > start);  // middle-dragging left shows later times
    QTest::keyClick(&v, Qt::Key_0);
    QVERIFY(v.mapping().showsAll());
    QTest::keyClick(&v, Qt::Key_Plus);
    QVERIFY(!v.mapping().showsAll());
    v.showAll();
    QImage img = v.grab().toImage();
    QVERIFY(gui_test::distinctColors(img) > 20);
    QVERIFY(gui_test::countColor(img, phaseColor('F'), 2) > 500);
    QVERIFY(gui_test::countColor(img, phaseColor('B'), 2) > 500);
  }

  void emptyTimelinePaints() {
    TimelineView v;
    v.resize(400, 200);
    QImage img = v.grab().toImage();
    QVERIFY(!img.isNull());
    QVERIFY(v.tooltipAt(QPoint(200, 100)).isEmpty());
  }

  void breakdownChart() {
    TimeBreakdownModel m;
    BreakdownChart chart;
    chart.setModel(&m);
    QVERIFY(!chart.barSeries());
    m.setPlans({{"#1 a", gui_test::candidate(1, 1, 1).report},
                {"#2 b", gui_test::candidate(2, 2, 1).report},
                {"#3 c", gui_test::candidate(1, 2, 1, Recompute::full).report}});
    QVERIFY(chart.barSeries());
    QStringList names;
    for (QBarSet* s : chart.barSeries()->barSets()) {
      names << s->label();
      QCOMPARE(s->count(), 3);
    }
    QVERIFY(names.contains("compute"));
    QVERIFY(names.contains("fill/drain"));       // the pp2 plans have a bubble
    QVERIFY(names.contains("stage imbalance"));  // ... and a heavier last stage (LM head and loss)
    QVERIFY(names.contains("recompute"));        // full recompute
    QVERIFY(!names.contains("CP comm"));         // all zero: left out of the legend
    QCOMPARE(chart.mfuSeries()->count(), 3);
    QCOMPARE(chart.chart()->axes().size(), 3);  // plans, time, MFU
    chart.resize(900, 500);
    QVERIFY(gui_test::distinctColors(chart.grab().toImage()) > 20);
  }

  void memoryChart() {
    MemoryModel m;
    MemoryChart chart;
    chart.setModel(&m);
    m.setReport("tp2 pp4", gui_test::candidate(2, 4, 1).report);
    QVERIFY(chart.barSeries());
    QCOMPARE(chart.barSeries()->barSets().front()->count(), 4);  // a bar per stage
    QVERIFY(chart.capacitySeries());
    QCOMPARE(chart.capacitySeries()->at(0).y(), 80.0);
    QVERIFY(chart.capacitySeries()->name().contains("80 GiB"));
    m.clear();
    QVERIFY(!chart.barSeries());
  }

  void runsCharts() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("runs.db").toStdString();
    QVERIFY(writeDemoRuns(db).ok());
    auto snap = openRunsSnapshot(db);
    QVERIFY(snap.ok());
    MfuHistoryChart history;
    history.setSnapshot(snap.value());
    QCOMPARE(history.planCount(), 3);
    QCOMPARE(history.regressionSeries()->count(), int(snap->regression_ids.size()));
    PredictedMeasuredChart scatter;
    scatter.setSnapshot(snap.value());
    QCOMPARE(scatter.pointCount(), 27);
    OpTimingModel ops;
    OpCompareChart opsChart;
    opsChart.setModel(&ops);
    QCOMPARE(opsChart.opCount(), 0);
    auto rdb = runs::RunsDb::open_existing(db);
    ops.setRun(rdb.value()->get_run(snap->runs.front().id).value());
    QVERIFY(opsChart.opCount() > 0 && opsChart.opCount() <= OpCompareChart::kMaxOps);
    history.setSnapshot({});
    QCOMPARE(history.planCount(), 0);
    QVERIFY(!history.regressionSeries());
  }
};

QTEST_MAIN(TestWidgets)
#include "test_widgets.moc"
