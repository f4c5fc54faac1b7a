// The scaling view's table: one row per GPU count of a sweep — its best layout, step time, tokens/s, MFU,
// the per-GPU throughput against the smallest count, and with a token budget the ideal and expected days
// to train (planner/scaling.h: interruptions and checkpoints), goodput and the checkpoint interval.
// DisplayRole is text, ValueRole the number (GPUs, seconds, tokens/s, fractions, days).
#pragma once
#include <QAbstractTableModel>
#include <optional>
#include <vector>

#include "gui/models/rows_model.h"
#include "planner/scaling.h"

namespace mplan::gui {

class ScalingModel : public RowsModel<ScalePoint> {
  Q_OBJECT
 public:
  static constexpr int ValueRole = Qt::UserRole;
  enum Column {
    Gpus,
    Layout,
    StepTime,
    TokensPerS,
    TokensPerGpu,
    Mfu,
    Efficiency,
    IdealDays,
    ExpectedDays,
    Goodput,
    Interval,
    ColumnCount
  };

  explicit ScalingModel(QObject* parent = nullptr);
  // The sweep of `job` (its world size is each point's), with `tokens` > 0 the time to train.
  void setSweep(std::vector<ScalePoint> points, const Plan& job, double tokens, const ReliabilityParams& rel = {});
  void clear() { setSweep({}, Plan{}, 0); }
  const std::vector<ScalePoint>& points() const { return rows_; }
  const Plan& job() const { return job_; }
  double tokens() const { return tokens_; }
  // The job of row `row` (its GPU count) and its best candidate, null when nothing fits.
  Plan jobAt(int row) const;
  const Candidate* best(int row) const;

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  QVariant value(int row, int column) const;
  QVariant text(int row, int column) const;
  std::vector<std::optional<TimeToTrain>> ttt_;
  std::vector<double> efficiency_;
  Plan job_;
  double tokens_ = 0;
};

}  // namespace mplan::gui
