// The pipeline timeline view (see timeline_view.h).
#include "gui/widgets/timeline_view.h"

#include <QFontMetrics>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "gui/models/format.h"
#include "gui/widgets/palette.h"

namespace mplan::gui {

namespace {

constexpr int kMargin = 8;
constexpr int kTitleH = 26;
constexpr int kAxisH = 24;
constexpr int kHeaderW = 132;
constexpr int kComputeH = 34;
constexpr int kCommH = 15;
constexpr int kLaneGap = 3;
constexpr int kStageGap = 9;
constexpr int kLegendH = 30;

QColor textOn(const QColor& bg) { return bg.lightnessF() > 0.62 ? QColor(30, 30, 30) : QColor(Qt::white); }

}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setAutoFillBackground(false);
}

void TimelineView::setTimeline(TimelineData data, const QString& title) {
  data_ = std::move(data);
  title_ = title;
  double end = std::max(data_.step_time_s, data_.pipeline_end_s);
  for (const auto& l : data_.lanes)
    for (const auto& b : l.blocks) end = std::max(end, b.end_s());
  map_.setExtent(0.0, end > 0 ? end * 1.002 : 1.0);
  has_chunks_ = false;
  for (const auto& l : data_.lanes)
    for (const auto& b : l.blocks) has_chunks_ = has_chunks_ || b.chunk > 0;
  layoutLanes();
  setMinimumHeight(contentHeight());
  updateGeometry();
  update();
  emit viewChanged();
}

void TimelineView::clear() { setTimeline({}, {}); }

void TimelineView::layoutLanes() {
  lane_top_.clear();
  lane_height_.clear();
  int y = kMargin + kTitleH + kAxisH;
  for (size_t i = 0; i < data_.lanes.size(); ++i) {
    const auto& l = data_.lanes[i];
    if (i > 0) y += l.isCompute() ? kStageGap : kLaneGap;
    int h = l.isCompute() ? kComputeH : kCommH;
    lane_top_.push_back(y);
    lane_height_.push_back(h);
    y += h;
  }
  map_.setPixels(kHeaderW, std::max(50, width() - kHeaderW - kMargin));
}

int TimelineView::contentHeight() const {
  int y = kMargin + kTitleH + kAxisH;
  if (!lane_top_.empty()) y = lane_top_.back() + lane_height_.back();
  return y + 8 + kLegendH + kMargin;
}

QSize TimelineView::sizeHint() const { return {1000, std::max(240, contentHeight())}; }

QSize TimelineView::minimumSizeHint() const { return {400, std::max(160, contentHeight())}; }

int TimelineView::laneAt(int y) const {
  for (size_t i = 0; i < lane_top_.size(); ++i)
    if (y >= lane_top_[i] && y < lane_top_[i] + lane_height_[i]) return int(i);
  return -1;
}

QRect TimelineView::laneRect(int lane) const {
  if (lane < 0 || lane >= int(lane_top_.size())) return {};
  return QRect(kHeaderW, lane_top_[size_t(lane)], int(map_.width), lane_height_[size_t(lane)]);
}

QString TimelineView::tooltipAt(const QPoint& pos) const {
  int li = laneAt(pos.y());
  if (li < 0 || pos.x() < kHeaderW) return {};
  const TimelineLane& lane = data_.lanes[size_t(li)];
  double t = map_.toTime(pos.x());
  double slack = 2.0 / map_.pixelsPerSecond();
  int bi = blockIndexAt(lane, t, slack);
  QString where = QString("stage %1 · %2").arg(lane.stage).arg(QString::fromStdString(lane.stream));
  if (bi >= 0) {
    const TimelineBlock& b = lane.blocks[size_t(bi)];
    QString head;
    if (b.phase == 'F' || b.phase == 'B' || b.phase == 'W')
      head = QString("<b>%1</b> — %2<br>micro-batch %3, chunk %4")
                 .arg(QChar(b.phase))
                 .arg(phaseName(b.phase))
                 .arg(b.microbatch)
                 .arg(b.chunk);
    else
      head = QString("<b>%1</b> — %2").arg(QString::fromStdString(b.name).toHtmlEscaped(), phaseName(b.phase));
    if (b.phase == 'C' && b.microbatch >= 0) head += QString("<br>micro-batch %1, chunk %2").arg(b.microbatch).arg(b.chunk);
    return QString("%1<br>start %2<br>duration %3<br>%4")
        .arg(head, formatTime(b.start_s), formatTime(b.dur_s), where);
  }
  int bu = lane.isCompute() ? bubbleIndexAt(lane, t) : -1;
  if (bu >= 0) {
    const TimelineBubble& b = lane.bubbles[size_t(bu)];
    return QString("<b>bubble</b> (idle)<br>start %1<br>duration %2<br>%3 of the step<br>%4")
        .arg(formatTime(b.start_s), formatTime(b.dur_s), formatPercent(b.share), where);
  }
  return {};
}

void TimelineView::zoomIn() {
  map_.zoomAt(map_.x0 + map_.width / 2, 1.5);
  update();
  emit viewChanged();
}

void TimelineView::zoomOut() {
  map_.zoomAt(map_.x0 + map_.width / 2, 1 / 1.5);
  update();
  emit viewChanged();
}

void TimelineView::showAll() {
  map_.showAll();
  update();
  emit viewChanged();
}

void TimelineView::showRange(double start_s, double end_s) {
  map_.showAll();
  if (end_s > start_s) {
    double full = map_.span();
    map_.zoomAt(map_.x0, full / (end_s - start_s));
    map_.panPixels(-(start_s - map_.start_s) * map_.pixelsPerSecond());
  }
  update();
  emit viewChanged();
}

void TimelineView::resizeEvent(QResizeEvent*) { layoutLanes(); }

bool TimelineView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    QString tip = tooltipAt(he->pos());
    if (tip.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(he->globalPos(), tip, this);
    return true;
  }
  return QWidget::event(e);
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  QPoint d = e->angleDelta();
  double x = e->position().x();
  if ((e->modifiers() & Qt::ShiftModifier) || std::abs(d.x()) > std::abs(d.y())) {
    int v = std::abs(d.x()) > std::abs(d.y()) ? d.x() : d.y();
    map_.panPixels(v / 120.0 * map_.width * 0.1);
  } else if (d.y() != 0) {
    map_.zoomAt(std::max(x, map_.x0), std::pow(1.25, d.y() / 120.0));
  }
  update();
  emit viewChanged();
  e->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  if (e->button() == Qt::LeftButton) {
    dragging_ = true;
    drag_x_ = e->position().x();
    setCursor(Qt::ClosedHandCursor);
  }
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  if (!dragging_) return;
  double x = e->position().x();
  map_.panPixels(x - drag_x_);
  drag_x_ = x;
  update();
  emit viewChanged();
}

void TimelineView::mouseReleaseEvent(QMouseEvent*) {
  dragging_ = false;
  unsetCursor();
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent*) { showAll(); }

void TimelineView::keyPressEvent(QKeyEvent* e) {
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomIn(); break;
    case Qt::Key_Minus: zoomOut(); break;
    case Qt::Key_0:
    case Qt::Key_Home: showAll(); break;
    case Qt::Key_Left: map_.panPixels(map_.width * 0.2), update(), emit viewChanged(); break;
    case Qt::Key_Right: map_.panPixels(-map_.width * 0.2), update(), emit viewChanged(); break;
    default: QWidget::keyPressEvent(e);
  }
}

// ---- painting ---------------------------------------------------------------------------------

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter g(this);
  g.fillRect(rect(), Qt::white);
  g.setRenderHint(QPainter::TextAntialiasing);
  QFont bold = font();
  bold.setBold(true);
  bold.setPointSizeF(font().pointSizeF() * 1.1);
  g.setFont(bold);
  g.setPen(QColor(30, 30, 30));
  if (data_.empty()) {
    g.drawText(rect(), Qt::AlignCenter, "No timeline: run a search and select a plan.");
    return;
  }
  QRect titleRect(kMargin, kMargin, width() - 2 * kMargin, kTitleH);
  g.drawText(titleRect, Qt::AlignLeft | Qt::AlignVCenter, title_);
  g.setFont(font());
  g.setPen(QColor(70, 70, 70));
  QString summary = QString("step %1 · %2 micro-batches · critical rank: bubble %3, PP wait %4")
                        .arg(formatTime(data_.step_time_s))
                        .arg(data_.microbatches)
                        .arg(formatPercent(data_.bubble_fraction), formatPercent(data_.pp_wait_fraction));
  g.drawText(titleRect, Qt::AlignRight | Qt::AlignVCenter, summary);
  paintAxis(g);
  paintLanes(g);
  paintLegend(g);
}

void TimelineView::paintAxis(QPainter& g) {
  int axisY = kMargin + kTitleH;
  int bottom = lane_top_.empty() ? axisY + kAxisH : lane_top_.back() + lane_height_.back();
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 0.9);
  g.setFont(f);
  QFontMetrics fm(f);
  g.setPen(QColor(120, 120, 120));
  g.drawLine(int(map_.x0), axisY + kAxisH - 2, int(map_.x0 + map_.width), axisY + kAxisH - 2);
  auto ticks = niceTicks(map_.start_s, map_.end_s, std::max(2, int(map_.width / 110)));
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : map_.span();
  for (double t : ticks) {
    int x = int(std::lround(map_.toPixel(t)));
    g.setPen(QColor(235, 235, 235));
    g.drawLine(x, axisY + kAxisH, x, bottom);
    g.setPen(QColor(90, 90, 90));
    g.drawLine(x, axisY + kAxisH - 6, x, axisY + kAxisH - 2);
    QString label = formatTimeTick(t, step);
    int w = fm.horizontalAdvance(label);
    int lx = std::clamp(x - w / 2, int(map_.x0), int(map_.x0 + map_.width) - w);
    g.drawText(lx, axisY + kAxisH - 9, label);
  }
  g.setFont(font());
}

QString TimelineView::blockLabel(const TimelineBlock& b, double w, const QFontMetrics& fm) const {
  if (b.microbatch < 0) {
    QString n = QString::fromStdString(b.name);
    return fm.horizontalAdvance(n) + 6 <= w ? n : QString();
  }
  QString full = b.phase == 'C' ? QString::number(b.microbatch)
                                : QString("%1%2").arg(QChar(b.phase)).arg(b.microbatch);
  if (has_chunks_ && b.phase != 'C') full += QString(".%1").arg(b.chunk);
  if (fm.horizontalAdvance(full) + 4 <= w) return full;
  QString shorter = QString::number(b.microbatch);
  return fm.horizontalAdvance(shorter) + 3 <= w ? shorter : QString();
}

void TimelineView::paintLanes(QPainter& g) {
  QFont small = font();
  small.setPointSizeF(font().pointSizeF() * 0.85);
  QFontMetrics fmSmall(small);
  QFont bold = font();
  bold.setBold(true);
  const QRect plot(int(map_.x0), 0, int(map_.width), height());
  const double pps = map_.pixelsPerSecond();
  QBrush hatch(QColor(150, 150, 150), Qt::BDiagPattern);

  for (size_t li = 0; li < data_.lanes.size(); ++li) {
    const TimelineLane& lane = data_.lanes[li];
    const int y = lane_top_[li], h = lane_height_[li];
    // header
    g.setClipping(false);
    if (lane.isCompute()) {
      g.setFont(bold);
      g.setPen(QColor(30, 30, 30));
      g.drawText(QRect(kMargin, y, kHeaderW - kMargin - 6, h / 2 + 2), Qt::AlignLeft | Qt::AlignBottom,
                 QString("Stage %1").arg(lane.stage));
      g.setFont(small);
      g.setPen(QColor(110, 110, 110));
      double share = size_t(lane.stage) < data_.stage_bubble_share.size() ? data_.stage_bubble_share[size_t(lane.stage)] : 0;
      g.drawText(QRect(kMargin, y + h / 2 + 1, kHeaderW - kMargin - 6, h / 2), Qt::AlignLeft | Qt::AlignTop,
                 QString("idle %1").arg(formatPercent(share)));
    } else {
      g.setFont(small);
      g.setPen(QColor(110, 110, 110));
      g.drawText(QRect(kMargin, y, kHeaderW - kMargin - 6, h), Qt::AlignRight | Qt::AlignVCenter,
                 QString::fromStdString(lane.stream));
    }
    g.setClipRect(plot);
    g.fillRect(QRect(plot.left(), y, plot.width(), h), QColor(247, 247, 247));
    // bubbles
    for (const auto& b : lane.bubbles) {
      if (!map_.visible(b.start_s, b.dur_s)) continue;
      QRectF r(map_.toPixel(b.start_s), y, std::max(1.0, b.dur_s * pps), h);
      g.fillRect(r, QColor(228, 228, 228));
      g.fillRect(r, hatch);
      QString s = formatPercent(b.share);
      if (fmSmall.horizontalAdvance(s) + 6 <= r.width()) {
        QRectF tr = r.intersected(QRectF(plot));
        g.setFont(small);
        g.setPen(QColor(60, 60, 60));
        QRectF box(tr.center().x() - fmSmall.horizontalAdvance(s) / 2.0 - 2, tr.center().y() - fmSmall.height() / 2.0,
                   fmSmall.horizontalAdvance(s) + 4, fmSmall.height());
        if (box.width() + 2 <= tr.width()) {
          g.fillRect(box, QColor(255, 255, 255, 200));
          g.drawText(box, Qt::AlignCenter, s);
        }
      }
    }
    // blocks
    g.setFont(small);
    const bool compute = lane.isCompute();
    for (const auto& b : lane.blocks) {
      if (!map_.visible(b.start_s, b.dur_s)) continue;
      double w = std::max(1.0, b.dur_s * pps);
      QRectF r(map_.toPixel(b.start_s), y + (compute ? 0 : 1), w, h - (compute ? 0 : 2));
      QColor c = compute || b.phase == 'O' ? phaseColor(b.phase, b.chunk) : streamColor(QString::fromStdString(lane.stream));
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
    }
    g.setBrush(Qt::NoBrush);
  }
  // end of the step
  if (data_.step_time_s > 0 && !lane_top_.empty()) {
    double x = map_.toPixel(data_.step_time_s);
    g.setPen(QPen(QColor(60, 60, 60), 1, Qt::DashLine));
    g.drawLine(QPointF(x, lane_top_.front() - 4), QPointF(x, lane_top_.back() + lane_height_.back() + 4));
  }
  g.setClipping(false);
}

void TimelineView::paintLegend(QPainter& g) {
  int y = (lane_top_.empty() ? kMargin + kTitleH + kAxisH : lane_top_.back() + lane_height_.back()) + 10;
  QFont f = font();
  QFontMetrics fm(f);
  g.setFont(f);
  int x = kHeaderW;
  auto item = [&](const QColor& c, const QString& text, bool hatched = false) {
    QRect sw(x, y + 6, 14, 14);
    g.fillRect(sw, c);
    if (hatched) g.fillRect(sw, QBrush(QColor(150, 150, 150), Qt::BDiagPattern));
    g.setPen(c.darker(140));
    g.drawRect(sw.adjusted(0, 0, -1, -1));
    g.setPen(QColor(40, 40, 40));
    g.drawText(x + 19, y + 18, text);
    x += 19 + fm.horizontalAdvance(text) + 16;
  };
  bool hasW = false;
  QStringList streams;
  for (const auto& l : data_.lanes) {
    if (!l.isCompute() && !streams.contains(QString::fromStdString(l.stream))) streams << QString::fromStdString(l.stream);
    for (const auto& b : l.blocks) hasW = hasW || b.phase == 'W';
  }
  item(phaseColor('F'), "forward (F)");
  item(phaseColor('B'), hasW ? "backward, input grad (B)" : "backward (B)");
  if (hasW) item(phaseColor('W'), "weight grad (W)");
  item(phaseColor('O'), "optimizer");
  for (const QString& s : streams) item(streamColor(s), s == "dp" ? "DP grad reduce / gather" : s == "p2p" ? "PP send/recv" : s + " comm");
  item(QColor(228, 228, 228), "bubble / idle (share of step)", true);
  g.setPen(QColor(130, 130, 130));
  QString hint = "wheel: zoom · drag: pan · double-click: all";
  int hw = fm.horizontalAdvance(hint);
  if (x + hw < width() - kMargin) g.drawText(width() - kMargin - hw, y + 18, hint);
}

}  // namespace mplan::gui
