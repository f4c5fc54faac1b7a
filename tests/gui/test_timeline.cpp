// Time-to-pixel mapping, tick formatting, and the timeline data built from simulator reports:
// closed-form GPipe bubbles on a synthetic trace, and lanes/blocks of a real simulated pipeline.
#include <QtTest/QtTest>

#include "core/presets.h"
#include "gui/models/format.h"
#include "gui/models/time_to_pixel.h"
#include "gui/models/timeline_data.h"
#include "simulator/cost_params.h"
#include "tests/core/plan_fixture.h"

using namespace mplan;
using namespace mplan::gui;

namespace {

// GPipe with unit forward and backward times and no communication: stage s runs F(i) at s + i and
// B(i) at (m + pp - 1) + (pp - 1 - s) + i, so every stage idles 2 (pp - 1) of 2 (m + pp - 1).
StepReport gpipe(int pp, int m) {
  StepReport r;
  r.num_microbatches = m;
  r.step_time_s = 2.0 * (m + pp - 1);
  r.per_stage.resize(size_t(pp));
  for (int s = 0; s < pp; ++s) {
    r.per_stage[size_t(s)].stage = s;
    for (int i = 0; i < m; ++i) r.trace.push_back({s, "compute", "F", double(s + i), 1.0, 'F', i, 0});
    for (int i = 0; i < m; ++i) r.trace.push_back({s, "compute", "B", double(m + pp - 1 + (pp - 1 - s) + i), 1.0, 'B', i, 0});
  }
  return r;
}

}  // namespace

class TestTimeline : public QObject {
  Q_OBJECT
 private slots:
  void mappingRoundTrip() {
    TimeToPixel m;
    m.setExtent(0, 10);
    m.setPixels(100, 1000);
    QCOMPARE(m.toPixel(0), 100.0);
    QCOMPARE(m.toPixel(10), 1100.0);
    QCOMPARE(m.toTime(600), 5.0);
    QCOMPARE(m.durationToPixels(2), 200.0);
    QVERIFY(m.showsAll());
  }

  void zoomKeepsTimeUnderCursor() {
    TimeToPixel m;
    m.setExtent(0, 10);
    m.setPixels(0, 1000);
    double t = m.toTime(250);
    m.zoomAt(250, 4);
    QVERIFY(qAbs(m.toTime(250) - t) < 1e-9);
    QVERIFY(qAbs(m.span() - 2.5) < 1e-9);
    QVERIFY(!m.showsAll());
    m.zoomAt(250, 0.01);  // zooming out never shows more than the extent
    QVERIFY(m.showsAll());
    QCOMPARE(m.span(), 10.0);
  }

  void zoomAndPanClampToExtent() {
    TimeToPixel m;
    m.setExtent(0, 10);
    m.setPixels(0, 1000);
    m.zoomAt(0, 10);  // [0, 1]
    QVERIFY(qAbs(m.start_s) < 1e-12);
    m.panPixels(500);  // would show negative times
    QCOMPARE(m.start_s, 0.0);
    m.panPixels(-1e9);  // far right: clamped at the end
    QCOMPARE(m.end_s, 10.0);
    QVERIFY(qAbs(m.span() - 1.0) < 1e-9);
    m.zoomAt(500, 1e12);  // deepest zoom is min_span_s
    QVERIFY(qAbs(m.span() - m.min_span_s) < 1e-15);
    QVERIFY(m.visible(m.start_s, 0));
    QVERIFY(!m.visible(0, 1e-3));
  }

  void niceTicksAndLabels() {
    auto t = niceTicks(0, 1.0, 5);
    QCOMPARE(int(t.size()), 6);
    QCOMPARE(t[1], 0.2);
    t = niceTicks(0.013, 0.0182, 4);
    QVERIFY(!t.empty());
    for (double x : t) QVERIFY(x >= 0.013 && x <= 0.0182);
    QCOMPARE(formatTimeTick(0, 0.2), QString("0"));
    QCOMPARE(formatTimeTick(0.4, 0.2), QString("0.4 s"));
    QCOMPARE(formatTimeTick(0.15, 0.05), QString("150 ms"));
    QCOMPARE(formatTimeTick(2.5, 0.5), QString("2.5 s"));
    QCOMPARE(formatTimeTick(15, 5), QString("15 s"));
    QCOMPARE(formatTimeTick(25e-6, 5e-6), QString("25 us"));
    QCOMPARE(formatTime(1.5e-3), QString("1.50 ms"));
    QCOMPARE(formatTime(0), QString("0"));
    QCOMPARE(formatPercent(0.4567), QString("45.7%"));
  }

  void gpipeBubblesMatchClosedForm() {
    for (auto [pp, m] : {std::pair{4, 8}, {2, 2}, {8, 32}}) {
      TimelineData d = buildTimeline(gpipe(pp, m));
      QCOMPARE(d.stages, pp);
      QCOMPARE(int(d.lanes.size()), pp);  // no communication: one compute lane per stage
      QCOMPARE(d.blockCount(), 2 * pp * m);
      QCOMPARE(d.pipeline_end_s, 2.0 * (m + pp - 1));
      const double expected = double(pp - 1) / double(m + pp - 1);  // the 1F1B/GPipe bubble
      for (int s = 0; s < pp; ++s) {
        QVERIFY2(qAbs(d.stage_bubble_share[size_t(s)] - expected) < 1e-12, qPrintable(QString("stage %1").arg(s)));
        const TimelineLane& lane = d.lanes[size_t(d.computeLane(s))];
        double sum = 0;
        for (const auto& b : lane.bubbles) sum += b.share;
        QVERIFY(qAbs(sum - expected) < 1e-12);
        // stage 0 waits once (between its last F and first B), the last stage at the start and end,
        // the middle stages at the start, in the middle and at the end
        QCOMPARE(int(lane.bubbles.size()), s == 0 ? 1 : s == pp - 1 ? 2 : 3);
      }
    }
  }

  void hitTesting() {
    TimelineData d = buildTimeline(gpipe(4, 8));
    const TimelineLane& s1 = d.lanes[size_t(d.computeLane(1))];
    int i = blockIndexAt(s1, 1.5, 0.01);  // F0 of stage 1 spans [1, 2]
    QVERIFY(i >= 0);
    QCOMPARE(s1.blocks[size_t(i)].phase, 'F');
    QCOMPARE(s1.blocks[size_t(i)].microbatch, 0);
    QCOMPARE(blockIndexAt(s1, 0.5, 0.01), -1);  // warm-up bubble of stage 1
    QVERIFY(bubbleIndexAt(s1, 0.5) >= 0);
    QCOMPARE(blockIndexAt(s1, 0.995, 0.01), i);  // within the slack of F0's start
    QCOMPARE(blockIndexAt(s1, 12.5, 0.01), -1);  // waiting for the first backward
    int b = blockIndexAt(s1, 13.5, 0.01);
    QVERIFY(b >= 0);
    QCOMPARE(s1.blocks[size_t(b)].phase, 'B');
  }

  void realPipelineLanes() {
    Plan p = preset_plan("llama3-8b", 32, 64, 4096, 2, 4);
    SimOptions o;
    o.trace = true;
    auto r = simulate(p, default_cost_params(p.cluster), o);
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    TimelineData d = buildTimeline(r.value());
    QCOMPARE(d.stages, 4);
    const int m = r->num_microbatches;
    QCOMPARE(m, 16);
    for (int s = 0; s < 4; ++s) {
      int li = d.computeLane(s);
      QVERIFY(li >= 0);
      int f = 0, b = 0;
      for (const auto& blk : d.lanes[size_t(li)].blocks) f += blk.phase == 'F', b += blk.phase == 'B';
      QCOMPARE(f, m);
      QCOMPARE(b, m);
      // blocks sorted, lanes of a stage grouped after its compute lane
      const auto& bl = d.lanes[size_t(li)].blocks;
      QVERIFY(std::is_sorted(bl.begin(), bl.end(), [](auto& x, auto& y) { return x.start_s < y.start_s; }));
    }
    bool p2p = false;
    for (const auto& l : d.lanes) p2p = p2p || l.stream == "p2p";
    QVERIFY(p2p);
    // later stages wait for the first micro-batch: a warm-up bubble at t = 0
    const auto& last = d.lanes[size_t(d.computeLane(3))];
    QVERIFY(!last.bubbles.empty());
    QCOMPARE(last.bubbles.front().start_s, 0.0);
    // the stage idling most is the simulator's critical rank: its idle time is the simulator's
    // bubble plus exposed PP wait (later stages idle less: their optimizer runs while stage 0 drains)
    double most = *std::max_element(d.stage_bubble_share.begin(), d.stage_bubble_share.end());
    QVERIFY2(qAbs(most - (d.bubble_fraction + d.pp_wait_fraction)) < 0.02,
             qPrintable(QString("idle %1 vs bubble %2 + pp wait %3").arg(most).arg(d.bubble_fraction).arg(d.pp_wait_fraction)));
    QVERIFY(d.stage_bubble_share[0] > 0.1);
  }
};

QTEST_GUILESS_MAIN(TestTimeline)
#include "test_timeline.moc"
