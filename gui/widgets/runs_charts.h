// Charts of the runs view:
//   MfuHistoryChart         MFU of each plan's runs over time (predicted dashed), regressions marked
//   PredictedMeasuredChart  measured vs predicted MFU per run, with the measured = predicted line
//   OpCompareChart          per-op predicted vs measured time of one run (reads an OpTimingModel)
#pragma once
#include "gui/models/runs_models.h"
#include "gui/widgets/chart_view.h"

class QScatterSeries;

namespace mplan::gui {

class MfuHistoryChart : public ChartView {
  Q_OBJECT
 public:
  explicit MfuHistoryChart(QWidget* parent = nullptr);
  void setSnapshot(const RunsSnapshot& s);
  // The regression markers (one point per marked run); null when nothing is shown.
  QScatterSeries* regressionSeries() const { return regressions_; }
  int planCount() const { return plans_; }

 private:
  QScatterSeries* regressions_ = nullptr;
  int plans_ = 0;
};

class PredictedMeasuredChart : public ChartView {
  Q_OBJECT
 public:
  explicit PredictedMeasuredChart(QWidget* parent = nullptr);
  void setSnapshot(const RunsSnapshot& s);
  int pointCount() const { return points_; }

 private:
  int points_ = 0;
};

class OpCompareChart : public ModelChart<OpTimingModel> {
  Q_OBJECT
 public:
  explicit OpCompareChart(QWidget* parent = nullptr);
  int opCount() const { return ops_; }
  static constexpr int kMaxOps = 12;

 private:
  void rebuild() override;
  int ops_ = 0;
};

}  // namespace mplan::gui
