// The base of mplan's Qt Charts views: the shared look (antialiased, legend at the bottom, margins,
// minimum size), a chart cleared of every series and axis before each redraw, and, for the charts that
// draw an item model (ModelChart), following that model: a redraw (rebuild) after each of its resets
// and data changes.
#pragma once
#include <QAbstractItemModel>
#include <QPointer>
#include <QtCharts/QChartView>

class QValueAxis;

namespace mplan::gui {

class ChartView : public QChartView {
 public:
  ChartView(QWidget* parent, int margin, QSize minimum);

 protected:
  // Stops following the previous model, follows `model` (may be null) and rebuilds.
  void follow(QAbstractItemModel* model);
  // Draws the followed model from scratch; the charts that follow one override it.
  virtual void rebuild() {}
  // The chart, with every series and axis removed.
  QChart* clearedChart();

 private:
  QPointer<QAbstractItemModel> followed_;
};

// A chart of one item model of type Model.
template <class Model>
class ModelChart : public ChartView {
 public:
  ModelChart(QWidget* parent, int margin, QSize minimum) : ChartView(parent, margin, minimum) {}
  void setModel(Model* model) {
    model_ = model;
    follow(model);
  }

 protected:
  // The model's row count; 0, with the chart titled `empty`, when there is no model or it has no rows.
  int rowsOr(const QString& empty) {
    const int n = model_ ? model_->rowCount() : 0;
    if (n == 0) chart()->setTitle(empty);
    return n;
  }
  Model* model_ = nullptr;
};

// Sets a value axis to [0, a nice number above `max`] with ticks at nice steps.
void setNiceRange(QValueAxis* axis, double max);

}  // namespace mplan::gui
