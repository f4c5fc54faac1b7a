// Stacked bars of where each compared plan's step time goes (compute, recompute, exposed TP/CP/EP/DP/
// PP communication, bubble, optimizer), plans side by side, with MFU as a line on a second axis.
// Reads a TimeBreakdownModel and rebuilds on every reset.
#pragma once
#include <QtCharts/QChartView>
#include <functional>

#include "gui/models/breakdown_models.h"

class QStackedBarSeries;
class QScatterSeries;
class QValueAxis;

namespace mplan::gui {

class BreakdownChart : public QChartView {
  Q_OBJECT
 public:
  explicit BreakdownChart(QWidget* parent = nullptr);
  void setModel(TimeBreakdownModel* model);
  QStackedBarSeries* barSeries() const { return bars_; }
  QScatterSeries* mfuSeries() const { return mfu_; }

 private slots:
  void rebuild();

 private:
  TimeBreakdownModel* model_ = nullptr;
  QStackedBarSeries* bars_ = nullptr;
  QScatterSeries* mfu_ = nullptr;
};

// Shared by the charts: the view's look (antialiased, legend at the bottom, margins, minimum size).
void setupChartView(QChartView* view, int margin, QSize minimum);
// Shared by the charts: stops following model `old` and follows `now`, calling `rebuild` after each
// of its resets.
void followModel(QChartView* view, QAbstractItemModel* old, QAbstractItemModel* now, const std::function<void()>& rebuild);
// Shared by the charts: removes every series and axis of a chart.
void clearChart(QChart* chart);
// Sets a value axis to [0, a nice number above `max`] with ticks at nice steps.
void setNiceRange(QValueAxis* axis, double max);

}  // namespace mplan::gui
