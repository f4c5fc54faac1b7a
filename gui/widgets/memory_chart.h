// Memory per pipeline stage as stacked bars (weights, gradients, optimizer, activations, buffers,
// other) of the worst rank of each stage, against the GPU capacity line. Reads a MemoryModel.
#pragma once
#include "gui/models/breakdown_models.h"
#include "gui/widgets/chart_view.h"

class QStackedBarSeries;
class QLineSeries;
class QScatterSeries;

namespace mplan::gui {

class MemoryChart : public ModelChart<MemoryModel> {
  Q_OBJECT
 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  QStackedBarSeries* barSeries() const { return bars_; }
  QLineSeries* capacitySeries() const { return capacity_; }

 private:
  void rebuild() override;
  QStackedBarSeries* bars_ = nullptr;
  QLineSeries* capacity_ = nullptr;
  QScatterSeries* totals_ = nullptr;  // invisible points carrying the total above each bar
};

}  // namespace mplan::gui
