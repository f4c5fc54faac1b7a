// Table models behind the breakdown and memory charts (see breakdown_models.h).
#include "gui/models/breakdown_models.h"

#include "gui/models/format.h"

namespace mplan::gui {

// ---- TimeBreakdownModel -----------------------------------------------------------------------

QString TimeBreakdownModel::componentName(int k) {
  static const char* names[kComponents] = {"compute", "recompute",  "TP comm",         "CP comm",   "EP comm", "DP comm",
                                           "PP p2p",  "fill/drain", "stage imbalance", "optimizer", "offload"};
  return k >= 0 && k < kComponents ? QString(names[k]) : QString();
}

double TimeBreakdownModel::componentValue(const StepReport& r, int k) {
  const TimeBreakdown& t = r.time;
  // reports without the split (older plan files) count their whole bubble as fill/drain
  const bool split = r.bubble_fill_drain_s + r.bubble_imbalance_s > 0;
  switch (k) {
    case 0:
      return t.compute;
    case 1:
      return t.recompute;
    case 2:
      return t.tp_comm_exposed;
    case 3:
      return t.cp_comm_exposed;
    case 4:
      return t.ep_comm_exposed;
    case 5:
      return t.dp_comm_exposed;
    case 6:
      return t.pp_p2p_exposed;
    case 7:
      return split ? r.bubble_fill_drain_s : t.bubble;
    case 8:
      return split ? r.bubble_imbalance_s : 0.0;
    case 9:
      return t.optimizer;
    case 10:
      return t.offload_exposed;
  }
  return 0;
}

TimeBreakdownModel::TimeBreakdownModel(QObject* parent) : QAbstractTableModel(parent) {}

void TimeBreakdownModel::setPlans(std::vector<Entry> plans) {
  beginResetModel();
  plans_ = std::move(plans);
  endResetModel();
}

int TimeBreakdownModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(plans_.size()); }

int TimeBreakdownModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant TimeBreakdownModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Entry& e = plans_[size_t(index.row())];
  const int c = index.column();
  double v = 0;
  if (c == 0) return role == Qt::DisplayRole || role == ValueRole ? QVariant(e.label) : QVariant();
  if (c >= FirstComponentColumn)
    v = componentValue(e.report, c - FirstComponentColumn);
  else if (c == StepTimeColumn)
    v = e.report.step_time_s;
  else
    v = e.report.mfu;
  if (role == ValueRole) return v;
  if (role == Qt::DisplayRole) {
    if (c == MfuColumn) return formatPercent(v);
    double share = e.report.step_time_s > 0 ? v / e.report.step_time_s : 0;
    if (v == 0 && c != StepTimeColumn) return QString("–");
    return c == StepTimeColumn ? formatTime(v) : QString("%1 (%2)").arg(formatTime(v), formatPercent(share, share < 0.1 ? 1 : 0));
  }
  if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant TimeBreakdownModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (o == Qt::Vertical) return section >= 0 && section < rowCount() ? QVariant(section + 1) : QVariant();
  if (section == 0) return QString("plan");
  if (section >= FirstComponentColumn && section < ColumnCount) return componentName(section - FirstComponentColumn);
  if (section == StepTimeColumn) return QString("step time");
  if (section == MfuColumn) return QString("MFU");
  return {};
}

// ---- MemoryModel ------------------------------------------------------------------------------

QString MemoryModel::kindName(int k) {
  static const char* names[kKinds] = {"weights", "gradients", "optimizer", "activations", "buffers", "other"};
  return k >= 0 && k < kKinds ? QString(names[k]) : QString();
}

double MemoryModel::kindValue(const MemoryBreakdown& m, int k) {
  switch (k) {
    case 0:
      return m.weights;
    case 1:
      return m.gradients;
    case 2:
      return m.optimizer;
    case 3:
      return m.activations;
    case 4:
      return m.comm_buffers;
    case 5:
      return m.other;
  }
  return 0;
}

MemoryModel::MemoryModel(QObject* parent) : QAbstractTableModel(parent) {}

void MemoryModel::setReport(const QString& label, const StepReport& r) {
  beginResetModel();
  label_ = label;
  stages_ = r.per_stage;
  capacity_ = r.capacity_gib;
  endResetModel();
}

void MemoryModel::clear() {
  beginResetModel();
  stages_.clear();
  capacity_ = 0;
  label_.clear();
  endResetModel();
}

int MemoryModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(stages_.size()); }

int MemoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : TotalColumn + 1; }

QVariant MemoryModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const StageReport& s = stages_[size_t(index.row())];
  const int c = index.column();
  if (c == 0) return role == Qt::DisplayRole || role == ValueRole ? QVariant(s.stage) : QVariant();
  if (c == 1) return role == Qt::DisplayRole || role == ValueRole ? QVariant(s.layers) : QVariant();
  double v = c == TotalColumn ? s.memory.total() : kindValue(s.memory, c - FirstKindColumn);
  if (role == ValueRole) return v;
  if (role == Qt::DisplayRole) return formatGiB(v, 2);
  if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant MemoryModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || o != Qt::Horizontal) return {};
  if (section == 0) return QString("stage");
  if (section == 1) return QString("layers");
  if (section >= FirstKindColumn && section < TotalColumn) return kindName(section - FirstKindColumn);
  if (section == TotalColumn) return QString("total");
  return {};
}

}  // namespace mplan::gui
