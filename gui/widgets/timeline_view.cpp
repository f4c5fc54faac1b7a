// The pipeline timeline view: state, geometry, navigation, tooltips (see timeline_view.h; painting
// is in timeline_paint.cpp).
#include "gui/widgets/timeline_view.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "gui/models/format.h"
#include "gui/widgets/timeline_metrics.h"

namespace mplan::gui {

using namespace timeline_metrics;

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setAutoFillBackground(false);
  vbar_ = new QScrollBar(Qt::Vertical, this);
  vbar_->setVisible(false);
  connect(vbar_, &QScrollBar::valueChanged, this, [this](int v) {
    if (v == v_offset_) return;
    v_offset_ = v;
    update();
  });
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
  v_offset_ = 0;
  sel_start_ = sel_end_ = 0;
  layoutLanes();
  updateGeometry();
  update();
  emit viewChanged();
}

void TimelineView::clear() { setTimeline({}, {}); }

// ---- geometry ---------------------------------------------------------------------------------

QRect TimelineView::titleRect() const { return {kMargin, kMargin, width() - 2 * kMargin, kTitleH}; }

QRect TimelineView::summaryRect() const { return {kMargin, kMargin + kTitleH, width() - 2 * kMargin, kSummaryH}; }

QRect TimelineView::overviewRect() const {
  return {kHeaderW, kMargin + kTitleH + kSummaryH + 4, int(map_.width), kOverviewH - 6};
}

QRect TimelineView::axisRect() const { return {kHeaderW, kMargin + kTitleH + kSummaryH + kOverviewH, int(map_.width), kAxisH}; }

QRect TimelineView::lanesViewport() const {
  int top = axisRect().bottom() + 1;
  int bottom = height() - kLegendH - kMargin;
  return {0, top, width() - kScrollW, std::max(0, bottom - top)};
}

void TimelineView::layoutLanes() {
  lane_top_.clear();
  lane_height_.clear();
  int y = 4;
  for (size_t i = 0; i < data_.lanes.size(); ++i) {
    const auto& l = data_.lanes[i];
    if (i > 0) y += l.isCompute() ? kStageGap : kLaneGap;
    int h = l.isCompute() ? kComputeH : kCommH;
    lane_top_.push_back(y);
    lane_height_.push_back(h);
    y += h;
  }
  map_.setPixels(kHeaderW, std::max(50, width() - kHeaderW - kMargin - kScrollW));
  updateScrollBar();
}

int TimelineView::contentHeight() const { return lane_top_.empty() ? 0 : lane_top_.back() + lane_height_.back() + 6; }

int TimelineView::maxVerticalOffset() const { return std::max(0, contentHeight() - lanesViewport().height()); }

void TimelineView::setVerticalOffset(int px) {
  int v = std::clamp(px, 0, maxVerticalOffset());
  if (v == v_offset_) return;
  v_offset_ = v;
  vbar_->setValue(v);
  update();
}

void TimelineView::updateScrollBar() {
  QRect vp = lanesViewport();
  int max = maxVerticalOffset();
  vbar_->setGeometry(width() - kScrollW, vp.top(), kScrollW, vp.height());
  vbar_->setRange(0, max);
  vbar_->setPageStep(std::max(1, vp.height()));
  vbar_->setSingleStep(kWheelStepPx);
  vbar_->setVisible(max > 0);
  v_offset_ = std::clamp(v_offset_, 0, max);
  vbar_->setValue(v_offset_);
}

QSize TimelineView::sizeHint() const {
  int header = kMargin + kTitleH + kSummaryH + kOverviewH + kAxisH;
  return {1000, std::clamp(header + contentHeight() + kLegendH + kMargin, 300, 900)};
}

QSize TimelineView::minimumSizeHint() const {
  int header = kMargin + kTitleH + kSummaryH + kOverviewH + kAxisH;
  return {400, header + kComputeH * 2 + kLegendH + kMargin};
}

int TimelineView::laneAt(int y) const {
  QRect vp = lanesViewport();
  if (y < vp.top() || y > vp.bottom()) return -1;
  for (size_t i = 0; i < lane_top_.size(); ++i) {
    QRect r = laneRect(int(i));
    if (y >= r.top() && y <= r.bottom()) return int(i);
  }
  return -1;
}

QRect TimelineView::laneRect(int lane) const {
  if (lane < 0 || lane >= int(lane_top_.size())) return {};
  return QRect(kHeaderW, lanesViewport().top() + lane_top_[size_t(lane)] - v_offset_, int(map_.width),
               lane_height_[size_t(lane)]);
}

// ---- texts ------------------------------------------------------------------------------------

QString TimelineView::summaryText() const {
  if (data_.empty()) return {};
  QString s = QString("step %1 · %2 micro-batches").arg(formatTime(data_.step_time_s)).arg(data_.microbatches);
  if (data_.stages > 1) {
    s += QString(" · critical rank (stage %1): bubble %2 = fill/drain %3 + stage imbalance %4")
             .arg(data_.critical_stage)
             .arg(formatPercent(data_.bubble_fraction), formatPercent(data_.fill_drain_fraction),
                  formatPercent(data_.imbalance_fraction));
    if (data_.bottleneck_stage >= 0)
      s += QString(" · bottleneck: stage %1 (%2)")
               .arg(data_.bottleneck_stage)
               .arg(QString::fromStdString(stageContents(data_, data_.bottleneck_stage)));
    s += QString(" · PP wait %1").arg(formatPercent(data_.pp_wait_fraction));
  }
  return s;
}

QString TimelineView::stageHeaderText(int stage) const {
  QStringList lines{QString("Stage %1").arg(stage)};
  auto at = [](const std::vector<double>& v, int s) { return size_t(s) < v.size() ? v[size_t(s)] : 0.0; };
  if (data_.stages > 1 && stage == data_.bottleneck_stage) lines << "bottleneck";
  if (!data_.stage_fill_drain_share.empty()) {
    lines << QString("fill/drain %1").arg(formatPercent(at(data_.stage_fill_drain_share, stage)));
    double imb = at(data_.stage_imbalance_share, stage);
    if (imb >= 0.0005 && lines.size() < 3) lines << QString("imbalance %1").arg(formatPercent(imb));
  } else {
    lines << QString("idle %1").arg(formatPercent(at(data_.stage_bubble_share, stage)));
  }
  return lines.join('\n');
}

QString TimelineView::selectionText() const {
  if (!hasSelection()) return {};
  return QString("Δ %1 (%2 – %3)").arg(formatTime(sel_end_ - sel_start_), formatTime(sel_start_), formatTime(sel_end_));
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
    if (b.phase == 'C' && b.microbatch >= 0 && b.name.find("mb") == std::string::npos)
      head += QString("<br>micro-batch %1, chunk %2").arg(b.microbatch).arg(b.chunk);
    QString text = QString("%1<br>start %2<br>duration %3").arg(head, formatTime(b.start_s), formatTime(b.dur_s));
    if (b.critical) text += "<br><b>on the critical path</b>";
    if (b.phase == 'C')
      text += b.exposed_s > 0 ? QString("<br><b>exposed %1</b> (the compute stream waits)").arg(formatTime(b.exposed_s))
                              : QString("<br>hidden behind compute (exposed 0)");
    return text + "<br>" + where;
  }
  int bu = lane.isCompute() ? bubbleIndexAt(lane, t) : -1;
  if (bu >= 0) {
    const TimelineBubble& b = lane.bubbles[size_t(bu)];
    QString cause = b.imbalance ? QString("stage imbalance: waiting for stage %1, the bottleneck").arg(data_.bottleneck_stage)
                                : QString("pipeline fill/drain (or a transfer)");
    return QString("<b>bubble</b> (idle) — %1<br>start %2<br>duration %3<br>%4 of the step<br>%5")
        .arg(cause, formatTime(b.start_s), formatTime(b.dur_s), formatPercent(b.share), where);
  }
  return {};
}

// ---- navigation -------------------------------------------------------------------------------

void TimelineView::changed() {
  update();
  emit viewChanged();
}

void TimelineView::zoomIn() {
  map_.zoomAt(map_.x0 + map_.width / 2, 1.5);
  changed();
}

void TimelineView::zoomOut() {
  map_.zoomAt(map_.x0 + map_.width / 2, 1 / 1.5);
  changed();
}

void TimelineView::showAll() {
  map_.showAll();
  changed();
}

void TimelineView::showRange(double start_s, double end_s) {
  map_.showAll();
  if (end_s > start_s) {
    double full = map_.span();
    map_.zoomAt(map_.x0, full / (end_s - start_s));
    map_.panPixels(-(start_s - map_.start_s) * map_.pixelsPerSecond());
  }
  changed();
}

void TimelineView::zoomToSelection() {
  if (hasSelection()) showRange(sel_start_, sel_end_);
}

void TimelineView::clearSelection() {
  sel_start_ = sel_end_ = 0;
  update();
}

void TimelineView::centerOn(double t) {
  map_.panPixels((map_.start_s + map_.span() / 2 - t) * map_.pixelsPerSecond());
  changed();
}

double TimelineView::overviewTime(double x) const {
  QRect o = overviewRect();
  double f = std::clamp((x - o.left()) / std::max(1, o.width()), 0.0, 1.0);
  return map_.extent_start_s + f * (map_.extent_end_s - map_.extent_start_s);
}

void TimelineView::resizeEvent(QResizeEvent*) { layoutLanes(); }

bool TimelineView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    QString tip = tooltipAt(he->pos());
    if (tip.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(he->globalPos(), tip, this);
    return true;
  }
  return QWidget::event(e);
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  QPoint d = e->angleDelta();
  double x = e->position().x();
  if (e->modifiers() & Qt::ControlModifier) {
    if (d.y() != 0) map_.zoomAt(std::max(x, map_.x0), std::pow(1.25, d.y() / 120.0));
  } else if ((e->modifiers() & Qt::ShiftModifier) || std::abs(d.x()) > std::abs(d.y())) {
    int v = std::abs(d.x()) > std::abs(d.y()) ? d.x() : d.y();
    map_.panPixels(v / 120.0 * map_.width * 0.1);
  } else {
    setVerticalOffset(v_offset_ - int(std::lround(d.y() / 120.0 * kWheelStepPx)));
  }
  changed();
  e->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  const double x = e->position().x();
  drag_x_ = x;
  if (e->button() == Qt::LeftButton && overviewRect().contains(e->position().toPoint())) {
    drag_ = Drag::overview;
    centerOn(overviewTime(x));
  } else if (e->button() == Qt::MiddleButton || (e->button() == Qt::LeftButton && (e->modifiers() & Qt::ShiftModifier))) {
    drag_ = Drag::pan;
    setCursor(Qt::ClosedHandCursor);
  } else if (e->button() == Qt::LeftButton && x >= kHeaderW && e->position().y() >= axisRect().top()) {
    drag_ = Drag::select;
    drag_t0_ = map_.toTime(x);
    sel_start_ = sel_end_ = 0;
    update();
  }
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  const double x = e->position().x();
  switch (drag_) {
    case Drag::pan:
      map_.panPixels(x - drag_x_);
      drag_x_ = x;
      changed();
      break;
    case Drag::overview:
      centerOn(overviewTime(x));
      break;
    case Drag::select: {
      double t = map_.toTime(std::clamp(x, map_.x0, map_.x0 + map_.width));
      sel_start_ = std::min(drag_t0_, t);
      sel_end_ = std::max(drag_t0_, t);
      update();
      break;
    }
    case Drag::none:
      break;
  }
}

void TimelineView::mouseReleaseEvent(QMouseEvent* e) {
  if (drag_ == Drag::select && std::abs(e->position().x() - drag_x_) < 3) clearSelection();  // a click
  drag_ = Drag::none;
  unsetCursor();
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent*) {
  clearSelection();
  showAll();
}

void TimelineView::setShowCriticalPath(bool on) {
  if (show_critical_ == on) return;
  show_critical_ = on;
  update();
}

void TimelineView::keyPressEvent(QKeyEvent* e) {
  const double pan = map_.width * 0.2;
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
    case Qt::Key_W:
      zoomIn();
      break;
    case Qt::Key_Minus:
    case Qt::Key_S:
      zoomOut();
      break;
    case Qt::Key_0:
    case Qt::Key_Home:
      showAll();
      break;
    case Qt::Key_Left:
    case Qt::Key_A:
      map_.panPixels(pan), changed();
      break;
    case Qt::Key_Right:
    case Qt::Key_D:
      map_.panPixels(-pan), changed();
      break;
    case Qt::Key_Up:
      setVerticalOffset(v_offset_ - kWheelStepPx);
      break;
    case Qt::Key_Down:
      setVerticalOffset(v_offset_ + kWheelStepPx);
      break;
    case Qt::Key_PageUp:
      setVerticalOffset(v_offset_ - lanesViewport().height());
      break;
    case Qt::Key_PageDown:
      setVerticalOffset(v_offset_ + lanesViewport().height());
      break;
    case Qt::Key_Z:
    case Qt::Key_Return:
    case Qt::Key_Enter:
      zoomToSelection();
      break;
    case Qt::Key_Escape:
      clearSelection();
      break;
    case Qt::Key_C:
      setShowCriticalPath(!show_critical_);
      break;
    default:
      QWidget::keyPressEvent(e);
  }
}

}  // namespace mplan::gui
