// Charts of the runs view:
//   MfuHistoryChart         MFU of each plan's runs over time (predicted dashed), regressions marked
//   PredictedMeasuredChart  measured vs predicted MFU per run, with the measured = predicted line
//   OpCompareChart          per-op predicted vs measured time of one run (reads an OpTimingModel)
#pragma once
#include <QtCharts/QChartView>

#include "gui/models/runs_models.h"

class QScatterSeries;

namespace mplan::gui {

class MfuHistoryChart : public QChartView {
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

class PredictedMeasuredChart : public QChartView {
  Q_OBJECT
 public:
  explicit PredictedMeasuredChart(QWidget* parent = nullptr);
  void setSnapshot(const RunsSnapshot& s);
  int pointCount() const { return points_; }

 private:
  int points_ = 0;
};

class OpCompareChart : public QChartView {
  Q_OBJECT
 public:
  explicit OpCompareChart(QWidget* parent = nullptr);
  void setModel(OpTimingModel* model);
  int opCount() const { return ops_; }
  static constexpr int kMaxOps = 12;

 private slots:
  void rebuild();

 private:
  OpTimingModel* model_ = nullptr;
  int ops_ = 0;
};

}  // namespace mplan::gui
