// The scaling curve of a sweep: total tokens/s (left axis) and MFU (right axis) of each GPU count's best
// layout over the GPU count (log2 axis). Clicking a point asks for that count's results. Reads a
// ScalingModel.
#pragma once
#include "gui/models/scaling_model.h"
#include "gui/widgets/chart_view.h"

class QLineSeries;
class QScatterSeries;

namespace mplan::gui {

class ScalingChart : public ModelChart<ScalingModel> {
  Q_OBJECT
 public:
  explicit ScalingChart(QWidget* parent = nullptr);
  QScatterSeries* throughputPoints() const { return points_; }
  QLineSeries* mfuSeries() const { return mfu_; }

 signals:
  void pointClicked(int row);  // the model's row of the clicked GPU count

 private:
  void rebuild() override;
  QLineSeries *line_ = nullptr, *mfu_ = nullptr;
  QScatterSeries* points_ = nullptr;
  std::vector<int> rows_;  // point index -> model row (counts where a layout fits)
};

}  // namespace mplan::gui
