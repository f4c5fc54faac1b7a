// The pipeline timeline, navigated like Nsight Systems and Perfetto. Pinned at the top: the title,
// the step summary (bubble by cause, bottleneck stage), an overview strip of the whole step with the
// visible range, and the time ruler; below them the lanes scroll vertically — a compute lane per
// stage (F/B/W blocks per micro-batch and chunk, the optimizer, bubbles hatched grey for fill/drain
// and amber for stage imbalance) followed by its communication lanes (TP, CP, EP, DP, PP; the
// exposed part of each block drawn solid, the hidden part pale) — with arrows from each pipeline
// send to the action that consumes it; the legend is pinned at the bottom.
// Mouse: wheel scrolls the lanes, Ctrl+wheel zooms about the cursor, Shift+wheel pans; drag selects a
// time range and shows its duration (Z or Enter zooms to it, Esc clears); middle-drag or Shift+drag
// pans; click or drag in the overview moves the visible range; double click shows the whole step.
// Keys: W/S or +/- zoom, A/D or arrows pan, Up/Down/PageUp/PageDown scroll, 0 or Home: whole step.
// Time-to-pixel questions go to TimeToPixel; painting lives in timeline_paint.cpp.
#pragma once
#include <QString>
#include <QWidget>
#include <utility>

#include "gui/models/time_to_pixel.h"
#include "gui/models/timeline_data.h"

class QScrollBar;

namespace mplan::gui {

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);

  void setTimeline(TimelineData data, const QString& title);
  void clear();
  const TimelineData& timeline() const { return data_; }
  const TimeToPixel& mapping() const { return map_; }
  QString title() const { return title_; }
  // The step summary under the title (bubble by cause, bottleneck, PP wait).
  QString summaryText() const;
  // The header of a stage's compute lane ("Stage 2", "bottleneck", "fill/drain 2.5%" ...), lines joined by '\n'.
  QString stageHeaderText(int stage) const;

  // Geometry, in widget coordinates (tests and hit-testing). The pinned header: title, summary,
  // overview strip and ruler; the lanes' viewport below it (lanes scroll inside it).
  QRect titleRect() const;
  QRect summaryRect() const;
  QRect overviewRect() const;
  QRect axisRect() const;
  QRect lanesViewport() const;
  // The lane under y (-1 for none, also outside the viewport); a lane's rect (scrolled; may lie
  // outside the viewport).
  int laneAt(int y) const;
  QRect laneRect(int lane) const;
  int verticalOffset() const { return v_offset_; }
  int maxVerticalOffset() const;
  void setVerticalOffset(int px);
  // The tooltip text at a point ("" when nothing is there).
  QString tooltipAt(const QPoint& pos) const;
  // The selected time range (start < end), or {0, 0} for none; its text ("Δ 12.3 ms …").
  std::pair<double, double> selection() const { return {sel_start_, sel_end_}; }
  bool hasSelection() const { return sel_end_ > sel_start_; }
  QString selectionText() const;
  // The critical path (blocks outlined in red, simulator/critical_path.h): on by default, C toggles it.
  bool showCriticalPath() const { return show_critical_; }
  void setShowCriticalPath(bool on);
  // Critical blocks outlined in the last paint.
  int criticalDrawn() const { return critical_drawn_; }
  // Flows drawn in the last paint (0 when too many are visible to draw them).
  int flowsDrawn() const { return flows_drawn_; }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 public slots:
  void zoomIn();
  void zoomOut();
  void showAll();
  // Shows [start_s, end_s] (clamped to the data).
  void showRange(double start_s, double end_s);
  void zoomToSelection();
  void clearSelection();

 signals:
  void viewChanged();

 protected:
  void paintEvent(QPaintEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  bool event(QEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;

 private:
  enum class Drag { none, select, pan, overview };
  void layoutLanes();
  int contentHeight() const;  // all lanes, unscrolled
  void updateScrollBar();
  void changed();
  void centerOn(double t);
  double overviewTime(double x) const;
  // painting (timeline_paint.cpp)
  void paintHeader(class QPainter& g);
  void paintOverview(class QPainter& g);
  void paintAxis(class QPainter& g);
  void paintLanes(class QPainter& g);
  void paintFlows(class QPainter& g);
  void paintSelection(class QPainter& g);
  void paintLegend(class QPainter& g);
  QString blockLabel(const TimelineBlock& b, double widthPx, const class QFontMetrics& fm) const;

  TimelineData data_;
  QString title_;
  TimeToPixel map_;
  std::vector<int> lane_top_, lane_height_;  // content coordinates (0 = first lane)
  int v_offset_ = 0;
  QScrollBar* vbar_;
  bool has_chunks_ = false;
  bool show_critical_ = true;
  mutable int critical_drawn_ = 0;  // label blocks with their chunk (interleaved schedules)
  Drag drag_ = Drag::none;
  double drag_x_ = 0, drag_t0_ = 0;
  double sel_start_ = 0, sel_end_ = 0;
  int flows_drawn_ = 0;
};

}  // namespace mplan::gui
