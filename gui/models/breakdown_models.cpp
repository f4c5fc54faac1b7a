// Table models behind the breakdown and memory charts (see breakdown_models.h).
#include "gui/models/breakdown_models.h"

#include <iterator>

#include "gui/models/format.h"

namespace mplan::gui {

// ---- TimeBreakdownModel -----------------------------------------------------------------------

namespace {

// The time components in column order, and the TimeBreakdown member of each (null for the two parts
// of the bubble, which come from the report).
constexpr const char* kComponentNames[] = {"compute", "recompute",  "TP comm",         "CP comm",   "EP comm", "DP comm",
                                           "PP p2p",  "fill/drain", "stage imbalance", "optimizer", "offload"};
constexpr double TimeBreakdown::*kComponentTimes[] = {&TimeBreakdown::compute,
                                                      &TimeBreakdown::recompute,
                                                      &TimeBreakdown::tp_comm_exposed,
                                                      &TimeBreakdown::cp_comm_exposed,
                                                      &TimeBreakdown::ep_comm_exposed,
                                                      &TimeBreakdown::dp_comm_exposed,
                                                      &TimeBreakdown::pp_p2p_exposed,
                                                      nullptr,
                                                      nullptr,
                                                      &TimeBreakdown::optimizer,
                                                      &TimeBreakdown::offload_exposed};
static_assert(std::size(kComponentNames) == TimeBreakdownModel::kComponents);
static_assert(std::size(kComponentTimes) == TimeBreakdownModel::kComponents);
constexpr int kFillDrain = 7, kImbalance = 8;

// The memory kinds in column order: name and MemoryBreakdown member.
struct Kind {
  const char* name;
  double MemoryBreakdown::*gib;
};
constexpr Kind kKindTable[] = {{"weights", &MemoryBreakdown::weights},      {"gradients", &MemoryBreakdown::gradients},
                               {"optimizer", &MemoryBreakdown::optimizer},  {"activations", &MemoryBreakdown::activations},
                               {"buffers", &MemoryBreakdown::comm_buffers}, {"other", &MemoryBreakdown::other}};
static_assert(std::size(kKindTable) == MemoryModel::kKinds);

}  // namespace

QString TimeBreakdownModel::componentName(int k) { return k >= 0 && k < kComponents ? QString(kComponentNames[k]) : QString(); }

double TimeBreakdownModel::componentValue(const StepReport& r, int k) {
  if (k < 0 || k >= kComponents) return 0;
  // reports without the split (older plan files) count their whole bubble as fill/drain
  const bool split = r.bubble_fill_drain_s + r.bubble_imbalance_s > 0;
  if (k == kFillDrain) return split ? r.bubble_fill_drain_s : r.time.bubble;
  if (k == kImbalance) return split ? r.bubble_imbalance_s : 0.0;
  return r.time.*kComponentTimes[k];
}

TimeBreakdownModel::TimeBreakdownModel(QObject* parent) : RowsModel(ColumnCount, parent) {}

void TimeBreakdownModel::setPlans(std::vector<Entry> plans) {
  beginResetModel();
  rows_ = std::move(plans);
  endResetModel();
}

QVariant TimeBreakdownModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Entry& e = rows_[size_t(index.row())];
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

QString MemoryModel::kindName(int k) { return k >= 0 && k < kKinds ? QString(kKindTable[k].name) : QString(); }

double MemoryModel::kindValue(const MemoryBreakdown& m, int k) { return k >= 0 && k < kKinds ? m.*kKindTable[k].gib : 0; }

MemoryModel::MemoryModel(QObject* parent) : RowsModel(TotalColumn + 1, parent) {}

void MemoryModel::setReport(const QString& label, const StepReport& r) {
  beginResetModel();
  label_ = label;
  rows_ = r.per_stage;
  capacity_ = r.capacity_gib;
  endResetModel();
}

void MemoryModel::clear() {
  beginResetModel();
  rows_.clear();
  capacity_ = 0;
  label_.clear();
  endResetModel();
}

QVariant MemoryModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const StageReport& s = rows_[size_t(index.row())];
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
