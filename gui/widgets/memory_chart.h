// Memory per pipeline stage as stacked bars (weights, gradients, optimizer, activations, buffers,
// other) of the worst rank of each stage, against the GPU capacity line. Reads a MemoryModel.
#pragma once
#include <QtCharts/QChartView>

#include "gui/models/breakdown_models.h"

class QStackedBarSeries;
class QLineSeries;
class QScatterSeries;

namespace mplan::gui {

class MemoryChart : public QChartView {
  Q_OBJECT
 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  void setModel(MemoryModel* model);
  QStackedBarSeries* barSeries() const { return bars_; }
  QLineSeries* capacitySeries() const { return capacity_; }

 private slots:
  void rebuild();

 private:
  MemoryModel* model_ = nullptr;
  QStackedBarSeries* bars_ = nullptr;
  QLineSeries* capacity_ = nullptr;
  QScatterSeries* totals_ = nullptr;  // invisible points carrying the total above each bar
};

}  // namespace mplan::gui
