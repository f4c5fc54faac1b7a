// The scaling view's table (see scaling_model.h).
#include "gui/models/scaling_model.h"

#include "gui/models/format.h"

namespace mplan::gui {

namespace {

const char* const kHeaders[ScalingModel::ColumnCount] = {"GPUs",          "Best layout", "Step time",       "Tokens/s",
                                                         "Tok/s/GPU",     "MFU",         "Scaling eff.",    "Ideal days",
                                                         "Expected days", "Goodput",     "Checkpoint every"};

QString durationText(double s) {
  if (s < 120) return QString("%1 s").arg(s, 0, 'f', 0);
  if (s < 7200) return QString("%1 min").arg(s / 60, 0, 'f', 0);
  return QString("%1 h").arg(s / 3600, 0, 'f', 1);
}

}  // namespace

ScalingModel::ScalingModel(QObject* parent) : RowsModel(ColumnCount, parent) {}

void ScalingModel::setSweep(std::vector<ScalePoint> points, const Plan& job, double tokens, const ReliabilityParams& rel) {
  beginResetModel();
  rows_ = std::move(points);
  job_ = job;
  tokens_ = tokens;
  ttt_.assign(rows_.size(), std::nullopt);
  efficiency_.assign(rows_.size(), 0);
  double base = 0;  // tokens/s/GPU of the smallest count that fits
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Candidate* c = best(int(i));
    if (!c) continue;
    if (base == 0) base = c->report.tokens_per_s_per_gpu;
    efficiency_[i] = base > 0 ? c->report.tokens_per_s_per_gpu / base : 0;
    if (tokens > 0) {
      Plan p = jobAt(int(i));
      p.parallel = c->plan.parallel;
      ttt_[i] = time_to_train(p, c->report, tokens, rel);
    }
  }
  endResetModel();
}

Plan ScalingModel::jobAt(int row) const {
  Plan p = job_;
  if (row >= 0 && row < int(rows_.size())) p.parallel.world_size = rows_[size_t(row)].gpus;
  return p;
}

const Candidate* ScalingModel::best(int row) const {
  if (row < 0 || row >= int(rows_.size()) || rows_[size_t(row)].result.top.empty()) return nullptr;
  return &rows_[size_t(row)].result.top.front();
}

QVariant ScalingModel::value(int row, int column) const {
  const Candidate* c = best(row);
  const auto& t = ttt_[size_t(row)];
  switch (column) {
    case Gpus:
      return rows_[size_t(row)].gpus;
    case StepTime:
      return c ? QVariant(c->report.step_time_s) : QVariant();
    case TokensPerS:
      return c ? QVariant(c->report.tokens_per_s_per_gpu * rows_[size_t(row)].gpus) : QVariant();
    case TokensPerGpu:
      return c ? QVariant(c->report.tokens_per_s_per_gpu) : QVariant();
    case Mfu:
      return c ? QVariant(c->report.mfu) : QVariant();
    case Efficiency:
      return c ? QVariant(efficiency_[size_t(row)]) : QVariant();
    case IdealDays:
      return t ? QVariant(t->ideal_s / 86400) : QVariant();
    case ExpectedDays:
      return t ? QVariant(t->expected_s / 86400) : QVariant();
    case Goodput:
      return t ? QVariant(t->goodput) : QVariant();
    case Interval:
      return t ? QVariant(t->interval_s) : QVariant();
    default:
      return {};
  }
}

QVariant ScalingModel::text(int row, int column) const {
  const Candidate* c = best(row);
  if (column == Layout) return c ? layoutLabel(c->plan.parallel) : QString("no layout fits");
  QVariant v = value(row, column);
  if (!v.isValid()) return QString("–");
  const double x = v.toDouble();
  switch (column) {
    case Gpus:
      return v.toInt();
    case StepTime:
      return formatTime(x);
    case TokensPerS:
    case TokensPerGpu:
      return formatCount(x);
    case Mfu:
    case Efficiency:
    case Goodput:
      return formatPercent(x);
    case IdealDays:
    case ExpectedDays:
      return QString::number(x, 'f', 1);
    case Interval: {
      const auto& t = ttt_[size_t(row)];
      return t->interval_steps > 0 ? QString("%1 (%2 steps)").arg(durationText(x)).arg(t->interval_steps) : QString("–");
    }
    default:
      return {};
  }
}

QVariant ScalingModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  if (role == Qt::DisplayRole) return text(index.row(), index.column());
  if (role == ValueRole) return value(index.row(), index.column());
  if (role == Qt::ToolTipRole && index.column() == Layout) return QString("Click to show this GPU count's results");
  return {};
}

QVariant ScalingModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || section < 0 || section >= ColumnCount || role != Qt::DisplayRole) return {};
  return QString(kHeaders[section]);
}

}  // namespace mplan::gui
