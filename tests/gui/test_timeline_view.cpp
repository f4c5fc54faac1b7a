// The timeline navigated as in Nsight Systems and Perfetto (issue 20, item 5) and what it shows:
//  - with pp 16 the ruler stays pinned while the lanes scroll (before, it scrolled out of view);
//  - the wheel scrolls, Ctrl+wheel zooms (before, the wheel always zoomed);
//  - an overview strip shows and moves the visible range; a drag measures a range, Z zooms to it;
//  - arrows link each pipeline send to the action that consumes it;
//  - a pp8 MoE plan shows its EP all-to-all and DP/ZeRO traffic with the exposed parts;
//  - a heavy-head pipeline labels its idle as stage imbalance and names the bottleneck;
//  - the title and the step summary never overlap;
//  - the critical path's blocks are outlined, and C toggles the outline (issue 15).
#include <QWheelEvent>
#include <QtTest/QtTest>

#include "core/presets.h"
#include "gui/models/format.h"
#include "gui/widgets/palette.h"
#include "gui/widgets/timeline_view.h"
#include "image_checks.h"
#include "tests/simulator/sim_fixtures.h"

using namespace mplan;
using namespace mplan::gui;

namespace {

Plan plan(const char* model, int gpus, int64_t gbs, int64_t seq, int tp, int pp, int ep = 1) {
  return preset_plan(model, gpus, gbs, seq, tp, pp, 1, ep);
}

TimelineData timelineOf(const Plan& p) {
  SimOptions o;
  o.trace = true;
  auto r = simulate(p, default_cost_params(p.cluster), o);
  if (!r) qFatal("simulate: %s", r.error().message().c_str());
  return buildTimeline(r.value());
}

void wheel(TimelineView& v, QPointF at, int dy, Qt::KeyboardModifiers mods = Qt::NoModifier) {
  QWheelEvent e(at, v.mapToGlobal(at), QPoint(), QPoint(0, dy), Qt::NoButton, mods, Qt::NoScrollPhase, false);
  QApplication::sendEvent(&v, &e);
}

// Shows `v` at w x h with the timeline of `p`; false when the window did not come up.
bool showTimeline(TimelineView& v, int w, int h, const Plan& p, const QString& title) {
  v.resize(w, h);
  v.setTimeline(timelineOf(p), title);
  v.show();
  return QTest::qWaitForWindowExposed(&v);
}

// Dark (text) pixels inside a rectangle of a grabbed image.
int darkPixels(const QImage& img, const QRect& r) {
  int n = 0;
  for (int y = r.top(); y <= r.bottom(); ++y)
    for (int x = r.left(); x <= r.right(); ++x)
      if (qGray(img.pixel(x, y)) < 140) ++n;
  return n;
}

}  // namespace

class TestTimelineView : public QObject {
  Q_OBJECT
 private slots:
  void rulerStaysPinnedWhileTheLanesScroll() {
    TimelineView v;
    QVERIFY(showTimeline(v, 1024, 500, plan("llama3-70b", 128, 64, 4096, 8, 16), "llama3-70b tp8 pp16"));
    QCOMPARE(v.timeline().stages, 16);
    QVERIFY(v.maxVerticalOffset() > 0);  // 16 stages do not fit: the lanes scroll
    const QRect axis = v.axisRect();
    const double span = v.mapping().span();
    QImage before = v.grab().toImage();
    QVERIFY(darkPixels(before, axis) > 20);  // tick labels
    QPointF at(v.mapping().x0 + 200, v.lanesViewport().center().y());
    for (int i = 0; i < 200; ++i) wheel(v, at, -120);  // to the last stage
    QCOMPARE(v.verticalOffset(), v.maxVerticalOffset());
    QCOMPARE(v.mapping().span(), span);  // scrolling is not zooming
    QCOMPARE(v.axisRect(), axis);
    const int last = int(v.timeline().lanes.size()) - 1;
    QVERIFY(v.lanesViewport().contains(v.laneRect(last).center()));
    QVERIFY(!v.lanesViewport().contains(v.laneRect(0).center()));
    QImage after = v.grab().toImage();
    QVERIFY2(darkPixels(after, axis) > 20, "the ruler is still drawn");
    QCOMPARE(v.laneAt(axis.center().y()), -1);  // no lane under the ruler
    bool last_stage_shown = false;              // some event of the last lane, wherever the calibration puts it
    for (int x = int(v.mapping().x0) + 2; x < v.lanesViewport().right() && !last_stage_shown; x += 4)
      last_stage_shown = v.tooltipAt(QPoint(x, v.laneRect(last).center().y())).contains("stage 15");
    QVERIFY(last_stage_shown);
    QTest::keyClick(&v, Qt::Key_PageUp);
    QVERIFY(v.verticalOffset() < v.maxVerticalOffset());
  }

  void ctrlWheelZoomsAboutTheCursor() {
    TimelineView v;
    v.resize(1200, 600);
    v.setTimeline(timelineOf(plan("llama3-8b", 64, 256, 4096, 2, 4)), "llama3-8b pp4");
    const double full = v.mapping().span();
    QPointF at(v.mapping().x0 + 300, v.lanesViewport().center().y());
    const double t = v.mapping().toTime(at.x());
    wheel(v, at, 240);
    QCOMPARE(v.mapping().span(), full);
    wheel(v, at, 240, Qt::ControlModifier);
    QVERIFY(v.mapping().span() < 0.7 * full);
    QVERIFY(qAbs(v.mapping().toTime(at.x()) - t) < 1e-9 * full);
    const double start = v.mapping().start_s;
    wheel(v, at, -120, Qt::ShiftModifier);
    QVERIFY(v.mapping().start_s != start);  // Shift+wheel pans
  }

  void dragMeasuresARangeAndZIsZoomToIt() {
    TimelineView v;
    QVERIFY(showTimeline(v, 1200, 600, plan("llama3-8b", 64, 256, 4096, 2, 4), "llama3-8b pp4"));
    const int y = v.laneRect(0).center().y();
    const int x1 = int(v.mapping().x0) + 100, x2 = x1 + 400;
    const double t1 = v.mapping().toTime(x1), t2 = v.mapping().toTime(x2), span = v.mapping().span();
    QTest::mousePress(&v, Qt::LeftButton, Qt::NoModifier, QPoint(x1, y));
    QMouseEvent move(QEvent::MouseMove, QPointF(x2, y), v.mapToGlobal(QPointF(x2, y)), Qt::NoButton, Qt::LeftButton,
                     Qt::NoModifier);
    QApplication::sendEvent(&v, &move);
    QTest::mouseRelease(&v, Qt::LeftButton, Qt::NoModifier, QPoint(x2, y));
    QVERIFY(v.hasSelection());
    QVERIFY(qAbs(v.selection().first - t1) < 1e-9 * span);
    QVERIFY(qAbs(v.selection().second - t2) < 1e-9 * span);
    QVERIFY2(v.selectionText().contains(formatTime(t2 - t1)), qPrintable(v.selectionText()));
    QCOMPARE(v.mapping().span(), span);  // measuring does not move the view
    QImage img = v.grab().toImage();
    QVERIFY(gui_test::countColor(img, QColor(31, 78, 121), 2) > 50);  // the duration label
    QTest::keyClick(&v, Qt::Key_Z);
    QVERIFY(qAbs(v.mapping().span() - (t2 - t1)) < 1e-6 * span);
    QVERIFY(qAbs(v.mapping().start_s - t1) < 1e-6 * span);
    QTest::keyClick(&v, Qt::Key_Escape);
    QVERIFY(!v.hasSelection());
    QTest::mouseDClick(&v, Qt::LeftButton, Qt::NoModifier, QPoint(x1, y));
    QVERIFY(v.mapping().showsAll());
  }

  void overviewShowsAndMovesTheVisibleRange() {
    TimelineView v;
    QVERIFY(showTimeline(v, 1200, 600, plan("llama3-8b", 64, 256, 4096, 2, 4), "llama3-8b pp4"));
    const QRect o = v.overviewRect();
    QVERIFY(o.width() > 500 && o.height() >= 20);
    QVERIFY(o.bottom() < v.axisRect().top() + 1);
    QImage img = v.grab().toImage();
    QVERIFY(gui_test::countColor(img.copy(o), phaseColor('F'), 3) > 50);  // the whole step in small
    v.zoomIn();
    v.zoomIn();
    const double span = v.mapping().span();
    QTest::mouseClick(&v, Qt::LeftButton, Qt::NoModifier, QPoint(o.left() + int(0.75 * o.width()), o.center().y()));
    const double extent = v.mapping().extent_end_s - v.mapping().extent_start_s;
    const double center = v.mapping().start_s + v.mapping().span() / 2;
    QVERIFY2(qAbs(center - 0.75 * extent) < 0.01 * extent || v.mapping().end_s == v.mapping().extent_end_s,
             qPrintable(QString("center %1 of %2").arg(center).arg(extent)));
    QCOMPARE(v.mapping().span(), span);
  }

  void arrowsLinkSendsToTheirConsumers() {
    TimelineView v;
    v.resize(1200, 700);
    TimelineData d = timelineOf(plan("llama3-8b", 64, 256, 4096, 2, 4));
    int sends = 0;
    for (const auto& l : d.lanes)
      for (const auto& b : l.blocks) sends += b.name.rfind("send", 0) == 0;
    QCOMPARE(int(d.flows.size()), sends);
    for (const auto& f : d.flows) {
      QVERIFY(f.to_s >= f.from_s);
      const int from = d.lanes[size_t(f.from_lane)].stage, to = d.lanes[size_t(f.to_lane)].stage;
      QVERIFY(d.lanes[size_t(f.to_lane)].isCompute());
      QVERIFY(std::abs(from - to) == 1);
    }
    v.setTimeline(d, "pp4");
    v.showRange(0, 0.1 * d.step_time_s);
    v.grab();
    QVERIFY(v.flowsDrawn() > 0);
  }

  void criticalPathIsOutlinedAndToggles() {
    // the blocks on the step's critical path (simulator/critical_path.h) are outlined; C toggles it
    TimelineView v;
    v.resize(1200, 700);
    TimelineData d = timelineOf(plan("llama3-8b", 64, 256, 4096, 2, 4));
    QVERIFY(d.critical_blocks > 0);
    int computeCritical = 0;
    for (const auto& l : d.lanes)
      for (const auto& b : l.blocks) computeCritical += l.isCompute() && b.critical;
    QVERIFY(computeCritical > 0);
    v.setTimeline(d, "pp4");
    QVERIFY(v.showCriticalPath());
    v.grab();
    QVERIFY(v.criticalDrawn() > 0);
    QTest::keyClick(&v, Qt::Key_C);
    QVERIFY(!v.showCriticalPath());
    v.grab();
    QCOMPARE(v.criticalDrawn(), 0);
    v.setShowCriticalPath(true);
    v.grab();
    QVERIFY(v.criticalDrawn() > 0);
  }

  void moePipelineShowsEpAndDpTraffic() {
    // Qwen3-30B-A3B on pp8 x ep8 with ZeRO-1: EP dispatch/combine on every action, DP reduce/gather
    TimelineView v;
    v.resize(1400, 900);
    Plan p = plan("qwen3-30b-a3b", 64, 256, 4096, 1, 8, 8);
    v.setTimeline(timelineOf(p), "qwen3-30b-a3b pp8 ep8");
    const TimelineData& d = v.timeline();
    int ep = -1, dp = -1;
    for (size_t i = 0; i < d.lanes.size(); ++i) {
      if (d.lanes[i].stage != 0) continue;
      if (d.lanes[i].stream == "ep") ep = int(i);
      if (d.lanes[i].stream == "dp") dp = int(i);
    }
    QVERIFY(ep >= 0 && dp >= 0);
    const TimelineBlock* exposed = nullptr;
    for (const auto& b : d.lanes[size_t(ep)].blocks)
      if (b.exposed_s > 0 && !exposed) exposed = &b;
    QVERIFY(exposed);
    QVERIFY(QString::fromStdString(exposed->name).contains("EP dispatch + combine"));
    v.showRange(exposed->start_s, exposed->end_s());
    QString tip =
        v.tooltipAt(QPoint(int(v.mapping().toPixel(exposed->end_s() - exposed->exposed_s / 2)), v.laneRect(ep).center().y()));
    QVERIFY2(tip.contains("exposed") && tip.contains("EP"), qPrintable(tip));
    v.showAll();
    QImage img = v.grab().toImage();
    QVERIFY(gui_test::countColor(img, streamColor("ep").darker(115), 2) > 100);
  }

  void heavyHeadImbalanceIsLabelledAsSuch() {
    Plan p = plan("qwen3-30b-a3b", 24, 512, 4096, 1, 3, 8);
    TimelineView v;
    v.resize(1400, 700);
    v.setTimeline(timelineOf(p), "qwen3-30b-a3b pp3 ep8");
    const TimelineData& d = v.timeline();
    QCOMPARE(d.bottleneck_stage, 2);
    QVERIFY(v.stageHeaderText(2).contains("bottleneck"));
    QVERIFY2(v.stageHeaderText(0).contains("imbalance"), qPrintable(v.stageHeaderText(0)));
    QVERIFY2(v.summaryText().contains("stage imbalance") &&
                 v.summaryText().contains("bottleneck: stage 2 (16 layers + LM head and loss)"),
             qPrintable(v.summaryText()));
    const TimelineLane& s0 = d.lanes[size_t(d.computeLane(0))];
    const TimelineBubble* wait = nullptr;
    for (const auto& b : s0.bubbles)
      if (b.imbalance && !wait) wait = &b;
    QVERIFY(wait);
    v.showRange(wait->start_s - wait->dur_s, wait->start_s + 2 * wait->dur_s);
    QString tip =
        v.tooltipAt(QPoint(int(v.mapping().toPixel(wait->start_s + wait->dur_s / 2)), v.laneRect(d.computeLane(0)).center().y()));
    QVERIFY2(tip.contains("stage imbalance"), qPrintable(tip));
    // the bottleneck waits only for fill/drain
    for (const auto& b : d.lanes[size_t(d.computeLane(2))].bubbles) QVERIFY(!b.imbalance);
  }

  void titleAndSummaryNeverOverlap() {
    TimelineView v;
    v.resize(900, 600);
    QString title = "#1 tp1 pp8 dp8 ep8 mbs1 z1 — qwen3-30b-a3b on 64 × H100-SXM5-80GB, gbs 256, seq 4096, bf16";
    v.setTimeline(timelineOf(plan("qwen3-30b-a3b", 64, 256, 4096, 1, 8, 8)), title);
    QVERIFY(!v.titleRect().intersects(v.summaryRect()));
    QVERIFY(v.rect().contains(v.titleRect()) && v.rect().contains(v.summaryRect()));
    QVERIFY(v.summaryRect().bottom() < v.overviewRect().top());
    QVERIFY(v.overviewRect().bottom() < v.axisRect().top() + 1);
  }
};

QTEST_MAIN(TestTimelineView)
#include "test_timeline_view.moc"
