// Models of the runs view, over the runs database (runs/runs_db.h) and its regression detection:
//   RunsSnapshot     everything the runs view shows, read in one go (no Qt)
//   RunsListModel    a row per run, newest first, with MFU, prediction and regression status
//   OpTimingModel    a row per op of one run: predicted vs measured time
#pragma once
#include <QAbstractTableModel>
#include <QString>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gui/models/rows_model.h"
#include "runs/regress.h"
#include "runs/runs_db.h"

namespace mplan::gui {

struct RunsSnapshot {
  std::string path;
  std::vector<runs::RunRecord> runs;  // newest first, without steps/ops
  runs::RegressReport regress;        // per plan: history (oldest first) and latest status
  // Runs that were regressions against their own baseline when they were the plan's latest run
  // (detection replayed over each plan's history), so old drops stay marked.
  std::set<int64_t> regression_ids;
};

// Reads the runs and replays regression detection. Errors (bad baseline option) are values.
Expected<RunsSnapshot> loadRunsSnapshot(runs::RunsDb& db, const runs::RegressOptions& opt = {});
// Opens an existing database and loads it; a missing, foreign or damaged file is an error naming it.
Expected<RunsSnapshot> openRunsSnapshot(const std::string& path, const runs::RegressOptions& opt = {});

// Short label of a run's plan: "llama3-8b · tp2 sp pp1 dp32 mbs1 z1" (without the model name when
// `with_model` is false); runs::plan_label when the plan does not parse.
QString runPlanLabel(const nlohmann::json& plan, bool with_model = true);
// True when every run of the snapshot trains the same model (labels can leave it out).
bool singleModel(const RunsSnapshot& s);

class RunsListModel : public RowsModel<runs::RunRecord> {
  Q_OBJECT
 public:
  enum Column { Id, Started, PlanLabel, Mfu, PredictedMfu, VsPrediction, Status, Steps, Source, Tags, ColumnCount };
  static constexpr int SortRole = Qt::UserRole;
  static constexpr int RunIdRole = Qt::UserRole + 1;

  explicit RunsListModel(QObject* parent = nullptr);
  void setSnapshot(const RunsSnapshot& s);
  void clear();
  const runs::RunRecord& run(int row) const { return rows_[size_t(row)]; }
  int rowOfRun(int64_t id) const;
  QString status(int row) const;

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<QString> labels_, status_;
};

class OpTimingModel : public RowsModel<runs::OpTiming> {
  Q_OBJECT
 public:
  enum Column { Op, Calls, Predicted, Measured, Error, ColumnCount };
  static constexpr int ValueRole = Qt::UserRole;

  explicit OpTimingModel(QObject* parent = nullptr);
  // Ops of one run (get_run), largest measured time first.
  void setRun(const runs::RunRecord& run);
  void clear();
  int64_t runId() const { return run_id_; }
  const std::vector<runs::OpTiming>& ops() const { return rows_; }

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  int64_t run_id_ = 0;
};

}  // namespace mplan::gui
