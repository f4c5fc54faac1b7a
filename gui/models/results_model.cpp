// The search results table and its sort/filter proxy (see results_model.h).
#include "gui/models/results_model.h"

#include <QBrush>
#include <QColor>
#include <QRegularExpression>

#include "gui/models/format.h"

namespace mplan::gui {

namespace {

struct ColumnInfo {
  const char* header;
  const char* key;
  const char* tip;
};

const ColumnInfo kColumns[ResultsModel::ColumnCount] = {
    {"#", "rank", "Rank by the search objective"},
    {"TP", "tp", "Tensor parallel size"},
    {"SP", "sp", "Sequence parallelism (with TP)"},
    {"PP", "pp", "Pipeline parallel size"},
    {"VPP", "vpp", "Virtual pipeline chunks per rank"},
    {"DP", "dp", "Data parallel size"},
    {"CP", "cp", "Context parallel size"},
    {"EP", "ep", "Expert parallel size"},
    {"ETP", "etp", "Expert tensor parallel size"},
    {"ZeRO", "zero", "0 DDP, 1 distributed optimizer, 2 + sharded gradients, 3 FSDP"},
    {"MBS", "mbs", "Micro-batch size"},
    {"Recompute", "recompute", "Activation recomputation"},
    {"Schedule", "schedule", "Pipeline schedule"},
    {"Step time", "step", "Predicted time of one optimizer step (filter in seconds)"},
    {"80% interval", "interval",
     "Step time interval from the cross-validated errors of the model's family; 'tied' when it overlaps the winner's"},
    {"Tok/s/GPU", "tokens", "Predicted training throughput per GPU"},
    {"MFU", "mfu", "Model FLOPs utilisation (causal-halved FLOPs; filter in percent)"},
    {"Memory", "memory", "Peak memory of the worst rank / GPU capacity (filter in GiB)"},
    {"Bubble", "bubble", "Pipeline bubble share of the step (filter in percent)"},
    {"Exp. comm", "comm", "Communication not hidden behind compute, share of the step (filter in percent)"},
    {"Folded", "folded",
     "Layouts folded into this one: the same structure, differing only in vpp, the pipeline split or the overlap flags, "
     "with an 80% interval overlapping this one's (Show folded layouts lists them)"},
};

double exposedComm(const TimeBreakdown& t) {
  return t.tp_comm_exposed + t.cp_comm_exposed + t.ep_comm_exposed + t.dp_comm_exposed + t.pp_p2p_exposed;
}

}  // namespace

ResultsModel::ResultsModel(QObject* parent) : RowsModel(ColumnCount, parent) {}

void ResultsModel::setCandidates(std::vector<Candidate> candidates) {
  beginResetModel();
  rows_ = std::move(candidates);
  labels_.clear();
  folded_.assign(rows_.size(), 0);
  for (size_t i = 0; i < rows_.size(); ++i) labels_.push_back(QString::number(i + 1));
  endResetModel();
}

void ResultsModel::setResult(const SearchResult& result, bool expand) {
  beginResetModel();
  rows_.clear();
  labels_.clear();
  folded_.clear();
  for (size_t g = 0; g < result.top.size(); ++g) {
    const size_t n = g < result.folded.size() ? result.folded[g].size() : 0;
    rows_.push_back(result.top[g]);
    labels_.push_back(QString::number(g + 1));
    folded_.push_back(int(n));
    if (!expand) continue;
    for (size_t m = 0; m < n; ++m) {
      rows_.push_back(result.folded[g][m]);
      labels_.push_back(QString("%1.%2").arg(g + 1).arg(m + 2));
      folded_.push_back(0);
    }
  }
  endResetModel();
}

QString ResultsModel::filterKey(int column) {
  return column >= 0 && column < ColumnCount ? QString(kColumns[column].key) : QString();
}

QVariant ResultsModel::display(const Candidate& c, int row, int column) const {
  const ParallelConfig& p = c.plan.parallel;
  const StepReport& r = c.report;
  switch (column) {
    case Rank:
      return labels_[size_t(row)];
    case Folded:
      return folded_[size_t(row)] > 0 ? QString("+%1").arg(folded_[size_t(row)]) : QString();
    case Tp:
      return p.tp;
    case Sp:
      return p.sp ? QString("yes") : QString("no");
    case Pp:
      return p.pp;
    case Vpp:
      return p.vpp;
    case Dp:
      return p.dp();
    case Cp:
      return p.cp;
    case Ep:
      return p.ep;
    case Etp:
      return p.etp;
    case Zero:
      return p.zero;
    case Mbs:
      return p.micro_batch_size;
    case RecomputeCol:
      return recomputeLabel(p);
    case ScheduleCol:
      return scheduleLabel(p);
    case StepTime:
      return formatTime(r.step_time_s);
    case Interval:
      if (!(r.step_time_s_interval.second > 0)) return QString("–");
      return QString("%1 – %2%3")
          .arg(formatTime(r.step_time_s_interval.first), formatTime(r.step_time_s_interval.second),
               c.tied_with_best ? QString(" (tied)") : QString());
    case TokensPerGpu:
      return formatCount(r.tokens_per_s_per_gpu);
    case Mfu:
      return formatPercent(r.mfu);
    case Memory:
      return QString("%1 / %2").arg(r.peak_memory_gib, 0, 'f', 1).arg(formatGiB(r.capacity_gib, 0));
    case Bubble:
      return formatPercent(r.bubble_fraction);
    case ExposedComm:
      return formatPercent(r.step_time_s > 0 ? exposedComm(r.time) / r.step_time_s : 0.0);
  }
  return {};
}

QVariant ResultsModel::sortValue(const Candidate& c, int row, int column) const {
  const StepReport& r = c.report;
  switch (column) {
    case Rank:
      return row + 1;
    case Folded:
      return folded_[size_t(row)];
    case Sp:
      return c.plan.parallel.sp ? 1 : 0;
    case RecomputeCol:
      return int(c.plan.parallel.recompute) * 1000 + c.plan.parallel.recompute_num_layers;
    case ScheduleCol:
      return scheduleLabel(c.plan.parallel);
    case StepTime:
      return r.step_time_s;
    case Interval:
      return r.step_time_s_interval.first;
    case TokensPerGpu:
      return r.tokens_per_s_per_gpu;
    case Mfu:
      return r.mfu * 100.0;
    case Memory:
      return r.peak_memory_gib;
    case Bubble:
      return r.bubble_fraction * 100.0;
    case ExposedComm:
      return r.step_time_s > 0 ? exposedComm(r.time) / r.step_time_s * 100.0 : 0.0;
    default:
      return display(c, row, column);
  }
}

QVariant ResultsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Candidate& c = rows_[size_t(index.row())];
  const int col = index.column();
  switch (role) {
    case Qt::DisplayRole:
      return display(c, index.row(), col);
    case SortRole:
      return sortValue(c, index.row(), col);
    case CandidateRole:
      return index.row();
    case Qt::TextAlignmentRole:
      return QVariant::fromValue(col == RecomputeCol || col == ScheduleCol ? Qt::AlignLeft | Qt::AlignVCenter
                                                                           : Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      if (!c.report.fits) return QBrush(QColor(180, 30, 30));
      return {};
    case Qt::ToolTipRole: {
      const StepReport& r = c.report;
      if (col == Memory) {
        const MemoryBreakdown& m = r.memory;
        return QString("Peak %1 of %2\nweights %3, gradients %4, optimizer %5\nactivations %6, buffers %7, other %8")
            .arg(formatGiB(r.peak_memory_gib), formatGiB(r.capacity_gib), formatGiB(m.weights), formatGiB(m.gradients),
                 formatGiB(m.optimizer), formatGiB(m.activations), formatGiB(m.comm_buffers), formatGiB(m.other));
      }
      if (col == Interval && c.tied_with_best) return QString::fromStdString("Statistically tied with #1: " + c.separate_by);
      if (col == ExposedComm) {
        const TimeBreakdown& t = r.time;
        return QString("TP %1, CP %2, EP %3, DP %4, PP %5")
            .arg(formatTime(t.tp_comm_exposed), formatTime(t.cp_comm_exposed), formatTime(t.ep_comm_exposed),
                 formatTime(t.dp_comm_exposed), formatTime(t.pp_p2p_exposed));
      }
      return layoutLabel(c.plan.parallel);
    }
    default:
      return {};
  }
}

QVariant ResultsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) return QString(kColumns[section].header);
  if (role == Qt::ToolTipRole) return QString("%1 (filter key: %2)").arg(kColumns[section].tip, kColumns[section].key);
  return {};
}

// ---------------------------------------------------------------------------------------------

ResultsFilterModel::ResultsFilterModel(QObject* parent) : QSortFilterProxyModel(parent) { setSortRole(ResultsModel::SortRole); }

void ResultsFilterModel::setFilterText(const QString& text) {
  text_ = text;
  terms_.clear();
  QStringList bad;
  static const QRegularExpression termRe("^([A-Za-z_]+)\\s*(<=|>=|!=|=|<|>)\\s*(.+)$");
  for (const QString& word : text.split(QRegularExpression("[\\s,]+"), Qt::SkipEmptyParts)) {
    Term t;
    auto m = termRe.match(word);
    if (!m.hasMatch()) {
      t.text = word;
      terms_.push_back(t);
      continue;
    }
    QString key = m.captured(1).toLower();
    for (int c = 0; c < ResultsModel::ColumnCount; ++c)
      if (ResultsModel::filterKey(c) == key) t.column = c;
    if (t.column < 0) {
      bad << word;
      continue;
    }
    t.op = m.captured(2);
    t.text = m.captured(3).trimmed();
    bool ok = false;
    QString num = t.text;
    num.remove('%');
    t.number = num.toDouble(&ok);
    t.numeric = ok;
    if (!t.numeric && t.op != "=" && t.op != "!=") {
      bad << word;
      continue;
    }
    terms_.push_back(t);
  }
  error_ = bad.isEmpty()
               ? QString()
               : QString("Ignored: %1 (use KEY OP VALUE with KEY one of tp, pp, dp, mfu, step, memory ...)").arg(bad.join(' '));
  invalidateFilter();
}

bool ResultsFilterModel::accepts(const Term& t, int row) const {
  QAbstractItemModel* src = sourceModel();
  if (t.column < 0) {
    for (int c = 0; c < src->columnCount(); ++c)
      if (src->index(row, c).data().toString().contains(t.text, Qt::CaseInsensitive)) return true;
    return false;
  }
  QModelIndex idx = src->index(row, t.column);
  if (t.numeric) {
    QVariant v = idx.data(ResultsModel::SortRole);
    bool ok = false;
    double x = v.toDouble(&ok);
    if (ok && v.typeId() != QMetaType::QString) {
      if (t.op == "=") return x == t.number;
      if (t.op == "!=") return x != t.number;
      if (t.op == "<") return x < t.number;
      if (t.op == "<=") return x <= t.number;
      if (t.op == ">") return x > t.number;
      return x >= t.number;
    }
  }
  bool eq = idx.data().toString().compare(t.text, Qt::CaseInsensitive) == 0 ||
            idx.data().toString().startsWith(t.text, Qt::CaseInsensitive);
  if (t.op == "=") return eq;
  if (t.op == "!=") return !eq;
  return false;
}

bool ResultsFilterModel::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  if (source_parent.isValid() || !sourceModel()) return false;
  for (const Term& t : terms_)
    if (!accepts(t, source_row)) return false;
  return true;
}

}  // namespace mplan::gui
