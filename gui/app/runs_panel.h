// The runs view: open a runs database; MFU over time per plan with regressions marked, measured vs
// predicted MFU, the list of runs, and per-op predicted vs measured times of the selected run.
// Problems (missing, foreign or damaged files) are shown in the panel, never thrown.
#pragma once
#include <QWidget>
#include <memory>

#include "gui/models/runs_models.h"

class QLabel;
class QTableView;
class QSortFilterProxyModel;

namespace mplan::gui {

class MfuHistoryChart;
class PredictedMeasuredChart;
class OpCompareChart;

class RunsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunsPanel(QWidget* parent = nullptr);
  ~RunsPanel() override;

  // Opens and loads the database; false (and a message in the panel) on any problem.
  bool openDatabase(const QString& path);
  // Shows the per-op chart of a run; false when the run is unknown.
  bool selectRun(int64_t id);
  QString message() const;
  QString path() const { return path_; }

  RunsListModel* runsModel() const { return runs_; }
  OpTimingModel* opsModel() const { return ops_; }
  QTableView* runsView() const { return table_; }
  MfuHistoryChart* historyChart() const { return history_; }
  PredictedMeasuredChart* scatterChart() const { return scatter_; }
  OpCompareChart* opsChart() const { return opsChart_; }

 signals:
  void openRequested();
  void errorOccurred(const QString& message);

 private:
  void showMessage(const QString& text, bool error);
  void onRunSelected();

  std::unique_ptr<runs::RunsDb> db_;
  QString path_;
  RunsListModel* runs_;
  QSortFilterProxyModel* proxy_;
  OpTimingModel* ops_;
  QLabel *path_label_, *message_;
  QTableView* table_;
  MfuHistoryChart* history_;
  PredictedMeasuredChart* scatter_;
  OpCompareChart* opsChart_;
};

}  // namespace mplan::gui
