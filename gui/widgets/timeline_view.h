// The pipeline timeline: a row per pipeline stage (compute lane with F/B/W blocks per micro-batch and
// chunk, then its communication lanes), bubbles shaded with their share of the step printed, a
// time axis, zoom (wheel, +/-), pan (drag, shift+wheel, arrows), reset (double click, 0), and
// tooltips (op, micro-batch, chunk, start, duration). Time-to-pixel questions go to TimeToPixel.
#pragma once
#include <QString>
#include <QWidget>

#include "gui/models/time_to_pixel.h"
#include "gui/models/timeline_data.h"

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

  // Geometry of the lanes (for tests and hit-testing): the lane under y, -1 for none; a lane's rect.
  int laneAt(int y) const;
  QRect laneRect(int lane) const;
  // The tooltip text at a point ("" when nothing is there).
  QString tooltipAt(const QPoint& pos) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 public slots:
  void zoomIn();
  void zoomOut();
  void showAll();
  // Shows [start_s, end_s] (clamped to the data).
  void showRange(double start_s, double end_s);

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
  void layoutLanes();
  int contentHeight() const;
  void paintAxis(class QPainter& g);
  void paintLanes(class QPainter& g);
  void paintLegend(class QPainter& g);
  QString blockLabel(const TimelineBlock& b, double widthPx, const class QFontMetrics& fm) const;

  TimelineData data_;
  QString title_;
  TimeToPixel map_;
  std::vector<int> lane_top_, lane_height_;
  bool has_chunks_ = false;  // label blocks with their chunk (interleaved schedules)
  bool dragging_ = false;
  double drag_x_ = 0;
};

}  // namespace mplan::gui
