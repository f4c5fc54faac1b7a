// Painting of the timeline view (see timeline_view.h): the pinned header (title, summary, overview
// strip, ruler), the scrolled lanes (blocks, bubbles by cause, exposed communication, transfer
// arrows), the selected range and the pinned legend.
#include <QFontMetrics>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

#include "gui/models/format.h"
#include "gui/widgets/palette.h"
#include "gui/widgets/timeline_metrics.h"
#include "gui/widgets/timeline_view.h"

namespace mplan::gui {

using namespace timeline_metrics;

namespace {

QColor textOn(const QColor& bg) { return bg.lightnessF() > 0.62 ? QColor(30, 30, 30) : QColor(Qt::white); }

QFont scaled(const QFont& f, double k, bool bold = false) {
  QFont g = f;
  g.setPointSizeF(f.pointSizeF() * k);
  g.setBold(bold);
  return g;
}

}  // namespace

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter g(this);
  g.fillRect(rect(), Qt::white);
  g.setRenderHint(QPainter::TextAntialiasing);
  if (data_.empty()) {
    g.setFont(scaled(font(), 1.1, true));
    g.setPen(QColor(30, 30, 30));
    g.drawText(rect(), Qt::AlignCenter, "No timeline: run a search and select a plan.");
    flows_drawn_ = 0;
    critical_drawn_ = 0;
    return;
  }
  paintLanes(g);  // first: the pinned parts paint over lanes scrolled under them
  paintFlows(g);
  paintSelection(g);
  g.fillRect(QRect(0, 0, width(), lanesViewport().top()), Qt::white);
  g.fillRect(QRect(0, lanesViewport().bottom() + 1, width(), height()), Qt::white);
  paintHeader(g);
  paintOverview(g);
  paintAxis(g);
  paintLegend(g);
}

void TimelineView::paintHeader(QPainter& g) {
  // title and summary on rows of their own, each elided: they never overlap
  QFont bold = scaled(font(), 1.1, true);
  g.setFont(bold);
  g.setPen(QColor(30, 30, 30));
  QRect tr = titleRect();
  g.drawText(tr, Qt::AlignLeft | Qt::AlignVCenter, QFontMetrics(bold).elidedText(title_, Qt::ElideRight, tr.width()));
  g.setFont(font());
  g.setPen(QColor(70, 70, 70));
  QRect sr = summaryRect();
  g.drawText(sr, Qt::AlignLeft | Qt::AlignVCenter, QFontMetrics(font()).elidedText(summaryText(), Qt::ElideRight, sr.width()));
  QFont small = scaled(font(), 0.85);
  g.setFont(small);
  g.setPen(QColor(120, 120, 120));
  QRect o = overviewRect();
  g.drawText(QRect(kMargin, o.top(), kHeaderW - kMargin - 6, o.height()), Qt::AlignRight | Qt::AlignVCenter, "whole step");
  if (hasSelection()) {
    g.setPen(QColor(31, 78, 121));
    g.drawText(QRect(kMargin, axisRect().top(), kHeaderW - kMargin - 6, kAxisH), Qt::AlignRight | Qt::AlignVCenter,
               formatTime(sel_end_ - sel_start_));
  }
}

void TimelineView::paintOverview(QPainter& g) {
  QRect o = overviewRect();
  g.fillRect(o, QColor(246, 246, 246));
  const double full = map_.extent_end_s - map_.extent_start_s;
  if (full <= 0 || data_.stages <= 0) return;
  const double k = o.width() / full;
  const double row = std::max(1.0, double(o.height() - 2) / data_.stages);
  for (const auto& lane : data_.lanes) {
    if (!lane.isCompute()) continue;
    double y = o.top() + 1 + lane.stage * row;
    for (const auto& b : lane.blocks)
      g.fillRect(
          QRectF(o.left() + (b.start_s - map_.extent_start_s) * k, y, std::max(0.6, b.dur_s * k), std::max(1.0, row - 0.5)),
          phaseColor(b.phase, b.chunk));
  }
  // the visible range: the rest dimmed, the window outlined
  QRectF win(o.left() + (map_.start_s - map_.extent_start_s) * k, o.top(), std::max(2.0, map_.span() * k), o.height());
  QColor dim(255, 255, 255, 150);
  g.fillRect(QRectF(o.left(), o.top(), win.left() - o.left(), o.height()), dim);
  g.fillRect(QRectF(win.right(), o.top(), o.right() + 1 - win.right(), o.height()), dim);
  g.setPen(QPen(QColor(31, 78, 121), 1.5));
  g.setBrush(Qt::NoBrush);
  g.drawRect(win.adjusted(0.5, 0.5, -0.5, -0.5));
}

void TimelineView::paintAxis(QPainter& g) {
  QRect a = axisRect();
  QFont f = scaled(font(), 0.9);
  g.setFont(f);
  QFontMetrics fm(f);
  g.setPen(QColor(120, 120, 120));
  g.drawLine(a.left(), a.bottom() - 1, a.right(), a.bottom() - 1);
  auto ticks = niceTicks(map_.start_s, map_.end_s, std::max(2, int(map_.width / 110)));
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : map_.span();
  QRect vp = lanesViewport();
  for (double t : ticks) {
    int x = int(std::lround(map_.toPixel(t)));
    g.setPen(QColor(235, 235, 235));
    g.drawLine(x, vp.top(), x, vp.bottom());
    g.setPen(QColor(90, 90, 90));
    g.drawLine(x, a.bottom() - 5, x, a.bottom() - 1);
    QString label = formatTimeTick(t, step);
    int w = fm.horizontalAdvance(label);
    int lx = std::clamp(x - w / 2, a.left(), a.right() - w);
    g.drawText(lx, a.bottom() - 8, label);
  }
}

QString TimelineView::blockLabel(const TimelineBlock& b, double w, const QFontMetrics& fm) const {
  if (b.microbatch < 0) {
    QString n = QString::fromStdString(b.name);
    return fm.horizontalAdvance(n) + 6 <= w ? n : QString();
  }
  QString full = b.phase == 'C' ? QString::number(b.microbatch) : QString("%1%2").arg(QChar(b.phase)).arg(b.microbatch);
  if (has_chunks_ && b.phase != 'C') full += QString(".%1").arg(b.chunk);
  if (fm.horizontalAdvance(full) + 4 <= w) return full;
  QString shorter = QString::number(b.microbatch);
  return fm.horizontalAdvance(shorter) + 3 <= w ? shorter : QString();
}

void TimelineView::paintLanes(QPainter& g) {
  critical_drawn_ = 0;
  QFont small = scaled(font(), 0.85);
  QFontMetrics fmSmall(small);
  const QRect vp = lanesViewport();
  const QRect plot(int(map_.x0), vp.top(), int(map_.width), vp.height());
  const double pps = map_.pixelsPerSecond();
  const QBrush hatch(QColor(150, 150, 150), Qt::BDiagPattern), amberHatch(QColor(196, 120, 20), Qt::BDiagPattern);
  for (size_t li = 0; li < data_.lanes.size(); ++li) {
    const TimelineLane& lane = data_.lanes[li];
    const QRect lr = laneRect(int(li));
    if (lr.bottom() < vp.top() || lr.top() > vp.bottom()) continue;
    const int y = lr.top(), h = lr.height();
    // header
    g.setClipRect(QRect(0, vp.top(), kHeaderW, vp.height()));
    if (lane.isCompute()) {
      QStringList lines = stageHeaderText(lane.stage).split('\n');
      g.setFont(scaled(font(), 1.0, true));
      g.setPen(QColor(30, 30, 30));
      g.drawText(QRect(kMargin, y, kHeaderW - kMargin - 6, 14), Qt::AlignLeft | Qt::AlignVCenter, lines.front());
      g.setFont(small);
      for (int k = 1; k < lines.size(); ++k) {
        bool hot = lines[k] == "bottleneck" || lines[k].startsWith("imbalance");
        g.setPen(hot ? QColor(160, 90, 0) : QColor(110, 110, 110));
        g.drawText(QRect(kMargin, y + 14 + (k - 1) * 13, kHeaderW - kMargin - 6, 13), Qt::AlignLeft | Qt::AlignVCenter, lines[k]);
      }
    } else {
      g.setFont(small);
      g.setPen(QColor(110, 110, 110));
      g.drawText(QRect(kMargin, y, kHeaderW - kMargin - 6, h), Qt::AlignRight | Qt::AlignVCenter,
                 QString::fromStdString(lane.stream));
    }
    g.setClipRect(plot);
    g.fillRect(QRect(plot.left(), y, plot.width(), h), QColor(247, 247, 247));
    for (const auto& b : lane.bubbles) {
      if (!map_.visible(b.start_s, b.dur_s)) continue;
      QRectF r(map_.toPixel(b.start_s), y, std::max(1.0, b.dur_s * pps), h);
      g.fillRect(r, b.imbalance ? QColor(250, 226, 180) : QColor(228, 228, 228));
      g.fillRect(r, b.imbalance ? amberHatch : hatch);
      QString s = formatPercent(b.share);
      QRectF tr = r.intersected(QRectF(plot));
      QRectF box(tr.center().x() - fmSmall.horizontalAdvance(s) / 2.0 - 2, tr.center().y() - fmSmall.height() / 2.0,
                 fmSmall.horizontalAdvance(s) + 4, fmSmall.height());
      if (box.width() + 2 <= tr.width()) {
        g.setFont(small);
        g.fillRect(box, QColor(255, 255, 255, 200));
        g.setPen(QColor(60, 60, 60));
        g.drawText(box, Qt::AlignCenter, s);
      }
    }
    g.setFont(small);
    const bool compute = lane.isCompute();
    const QPen critical_pen(QColor(200, 30, 30), 2);
    auto outline_critical = [&](const TimelineBlock& b, const QRectF& r) {
      if (!show_critical_ || !b.critical) return;
      g.setPen(critical_pen);
      g.setBrush(Qt::NoBrush);
      g.drawRect(r.adjusted(1, 1, -1, -1));
      ++critical_drawn_;
    };
    const QColor stream = streamColor(QString::fromStdString(lane.stream));
    for (const auto& b : lane.blocks) {
      if (!map_.visible(b.start_s, b.dur_s)) continue;
      double w = std::max(1.0, b.dur_s * pps);
      QRectF r(map_.toPixel(b.start_s), y + (compute ? 0 : 1), w, h - (compute ? 0 : 2));
      if (!compute && b.phase == 'C') {
        // the hidden part pale, the exposed part (the end of the block) solid
        g.fillRect(r, stream.lighter(165));
        double ex = std::min(w, b.exposed_s * pps);
        if (ex >= 0.5)
          g.fillRect(QRectF(r.right() - std::max(1.0, ex), r.top(), std::max(1.0, ex), r.height()), stream.darker(115));
        outline_critical(b, r);
        continue;
      }
      QColor c = phaseColor(b.phase, b.chunk);
      if (w >= 4) {
        g.setPen(QPen(c.darker(135), 1));
        g.setBrush(c);
        g.drawRect(r.adjusted(0.5, 0.5, -0.5, -0.5));
      } else {
        g.fillRect(r, c);
      }
      if (compute && w >= 10) {
        QString label = blockLabel(b, w, fmSmall);
        if (!label.isEmpty()) {
          g.setPen(textOn(c));
          g.drawText(r.intersected(QRectF(plot)), Qt::AlignCenter, label);
        }
      }
      outline_critical(b, r);
    }
    g.setBrush(Qt::NoBrush);
  }
  if (data_.step_time_s > 0) {  // end of the step
    double x = map_.toPixel(data_.step_time_s);
    g.setPen(QPen(QColor(60, 60, 60), 1, Qt::DashLine));
    g.drawLine(QPointF(x, vp.top()), QPointF(x, vp.bottom()));
  }
  g.setClipping(false);
}

void TimelineView::paintFlows(QPainter& g) {
  flows_drawn_ = 0;
  const QRect vp = lanesViewport();
  std::vector<const TimelineFlow*> vis;
  for (const auto& f : data_.flows) {
    if (!map_.visible(std::min(f.from_s, f.to_s), std::abs(f.to_s - f.from_s))) continue;
    QRect a = laneRect(f.from_lane), b = laneRect(f.to_lane);
    if (std::max(a.bottom(), b.bottom()) < vp.top() || std::min(a.top(), b.top()) > vp.bottom()) continue;
    vis.push_back(&f);
    if (int(vis.size()) > kMaxFlowsDrawn) return;  // too many to read: zoom in to see them
  }
  g.setClipRect(QRect(int(map_.x0), vp.top(), int(map_.width), vp.height()));
  g.setRenderHint(QPainter::Antialiasing, true);
  QColor c(40, 40, 40, 170);
  g.setPen(QPen(c, 1));
  g.setBrush(c);
  for (const TimelineFlow* f : vis) {
    QRect a = laneRect(f->from_lane), b = laneRect(f->to_lane);
    QPointF p0(map_.toPixel(f->from_s), a.center().y());
    QPointF p1(map_.toPixel(f->to_s), b.top() < a.top() ? b.bottom() : b.top());
    g.drawLine(p0, p1);
    QPointF d = p1 - p0;
    double len = std::hypot(d.x(), d.y());
    if (len > 6) {
      QPointF u = d / len, n(-u.y(), u.x());
      QPolygonF head({p1, p1 - 6 * u + 3 * n, p1 - 6 * u - 3 * n});
      g.drawPolygon(head);
    }
    ++flows_drawn_;
  }
  g.setRenderHint(QPainter::Antialiasing, false);
  g.setBrush(Qt::NoBrush);
  g.setClipping(false);
}

void TimelineView::paintSelection(QPainter& g) {
  if (!hasSelection()) return;
  const QRect vp = lanesViewport();
  double x0 = std::max(map_.x0, map_.toPixel(sel_start_)), x1 = std::min(map_.x0 + map_.width, map_.toPixel(sel_end_));
  if (x1 <= x0) return;
  QRectF r(x0, vp.top(), x1 - x0, vp.height());
  g.fillRect(r, QColor(76, 120, 168, 45));
  g.setPen(QPen(QColor(31, 78, 121), 1, Qt::DashLine));
  g.drawLine(QPointF(x0, vp.top()), QPointF(x0, vp.bottom()));
  g.drawLine(QPointF(x1, vp.top()), QPointF(x1, vp.bottom()));
  QString s = formatTime(sel_end_ - sel_start_);
  QFontMetrics fm(font());
  QRectF box((x0 + x1) / 2 - fm.horizontalAdvance(s) / 2.0 - 4, vp.top() + 2, fm.horizontalAdvance(s) + 8, fm.height() + 2);
  g.fillRect(box, QColor(31, 78, 121));
  g.setPen(Qt::white);
  g.setFont(font());
  g.drawText(box, Qt::AlignCenter, s);
}

void TimelineView::paintLegend(QPainter& g) {
  const int y = height() - kLegendH - kMargin + 4;
  QFont f = font();
  QFontMetrics fm(f);
  g.setFont(f);
  int x = kMargin;
  auto item = [&](const QColor& c, const QString& text, const QBrush* hatch = nullptr) {
    int w = 19 + fm.horizontalAdvance(text) + 14;
    if (x + w > width() - kMargin) return;
    QRect sw(x, y + 4, 14, 14);
    g.fillRect(sw, c);
    if (hatch) g.fillRect(sw, *hatch);
    g.setPen(c.darker(140));
    g.drawRect(sw.adjusted(0, 0, -1, -1));
    g.setPen(QColor(40, 40, 40));
    g.drawText(x + 19, y + 16, text);
    x += w;
  };
  bool hasW = false, imbalance = false;
  QStringList streams;
  for (const auto& l : data_.lanes) {
    if (!l.isCompute() && !streams.contains(QString::fromStdString(l.stream))) streams << QString::fromStdString(l.stream);
    for (const auto& b : l.blocks) hasW = hasW || b.phase == 'W';
    for (const auto& b : l.bubbles) imbalance = imbalance || b.imbalance;
  }
  item(phaseColor('F'), "forward");
  item(phaseColor('B'), hasW ? "backward (input grad)" : "backward");
  if (hasW) item(phaseColor('W'), "weight grad");
  item(phaseColor('O'), "optimizer");
  for (const QString& s : streams)
    item(streamColor(s).darker(115), s == "dp" ? "DP/ZeRO comm" : s == "p2p" ? "PP send/wait" : s.toUpper() + " comm");
  if (!streams.isEmpty()) item(QColor(200, 200, 200).lighter(120), "pale: hidden comm");
  QBrush grey(QColor(150, 150, 150), Qt::BDiagPattern), amber(QColor(196, 120, 20), Qt::BDiagPattern);
  item(QColor(228, 228, 228), "fill/drain", &grey);
  if (imbalance) item(QColor(250, 226, 180), "stage imbalance", &amber);
  if (show_critical_ && data_.critical_blocks > 0) item(QColor(200, 30, 30), "critical path (C)");
  g.setPen(QColor(130, 130, 130));
  QString hint = "wheel: scroll · Ctrl+wheel: zoom · drag: measure · Z: zoom to it";
  int hw = fm.horizontalAdvance(hint);
  if (x + hw < width() - kMargin) g.drawText(width() - kMargin - hw, y + 16, hint);
}

}  // namespace mplan::gui
