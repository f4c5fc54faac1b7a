// Models of the runs view (see runs_models.h).
#include "gui/models/runs_models.h"

#include <QBrush>
#include <QColor>
#include <algorithm>
#include <map>

#include "core/plan.h"
#include "gui/models/format.h"

namespace mplan::gui {

Expected<RunsSnapshot> loadRunsSnapshot(runs::RunsDb& db, const runs::RegressOptions& opt) {
  RunsSnapshot s;
  s.path = db.path();
  auto list = db.list_runs();
  if (!list) return list.error();
  s.runs = std::move(list).value();
  if (s.runs.empty()) return s;
  auto rep = runs::detect_regressions(s.runs, opt);
  if (!rep) return rep.error();
  s.regress = std::move(rep).value();
  // replay: each run of a plan judged as if it were the latest
  std::map<std::string, std::vector<const runs::RunRecord*>> byPlan;
  for (const auto& r : s.runs) byPlan[r.plan_key].push_back(&r);
  for (auto& [key, rs] : byPlan) {
    std::sort(rs.begin(), rs.end(),
              [](auto* a, auto* b) { return a->started_at != b->started_at ? a->started_at < b->started_at : a->id < b->id; });
    std::vector<runs::RunRecord> prefix;
    for (const auto* r : rs) {
      prefix.push_back(*r);
      if (prefix.size() < 2) continue;
      auto part = runs::detect_regressions(prefix, opt);
      if (part && !part->plans.empty() && part->plans.front().failed()) s.regression_ids.insert(r->id);
    }
  }
  return s;
}

Expected<RunsSnapshot> openRunsSnapshot(const std::string& path, const runs::RegressOptions& opt) {
  auto db = runs::RunsDb::open_existing(path);
  if (!db) return db.error();
  return loadRunsSnapshot(*db.value(), opt);
}

QString runPlanLabel(const nlohmann::json& plan, bool with_model) {
  auto p = plan_from_json(plan);
  if (!p) return QString::fromStdString(runs::plan_label(plan));
  if (!with_model) return layoutLabel(p->parallel);
  return QString("%1 · %2").arg(QString::fromStdString(p->model.name), layoutLabel(p->parallel));
}

bool singleModel(const RunsSnapshot& s) {
  std::string first;
  for (const auto& r : s.runs) {
    std::string name = r.plan.contains("model") && r.plan["model"].contains("name") && r.plan["model"]["name"].is_string()
                           ? r.plan["model"]["name"].get<std::string>()
                           : std::string();
    if (first.empty())
      first = name;
    else if (name != first)
      return false;
  }
  return true;
}

// ---- RunsListModel ----------------------------------------------------------------------------

RunsListModel::RunsListModel(QObject* parent) : RowsModel(ColumnCount, parent) {}

void RunsListModel::setSnapshot(const RunsSnapshot& s) {
  beginResetModel();
  rows_ = s.runs;
  labels_.clear();
  status_.clear();
  std::map<int64_t, std::string> latest;
  for (const auto& p : s.regress.plans) latest[p.latest_id] = p.status;
  for (const auto& r : rows_) {
    labels_.push_back(runPlanLabel(r.plan));
    if (s.regression_ids.count(r.id))
      status_.push_back("regression");
    else if (auto it = latest.find(r.id); it != latest.end())
      status_.push_back(QString::fromStdString(it->second));
    else
      status_.emplace_back();
  }
  endResetModel();
}

void RunsListModel::clear() { setSnapshot({}); }

int RunsListModel::rowOfRun(int64_t id) const {
  for (size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].id == id) return int(i);
  return -1;
}

QString RunsListModel::status(int row) const { return status_[size_t(row)]; }

QVariant RunsListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const auto& r = rows_[size_t(index.row())];
  const auto& sm = r.summary;
  double vs = sm.predicted_mfu > 0 ? (sm.mfu - sm.predicted_mfu) / sm.predicted_mfu : 0.0;
  const int c = index.column();
  if (role == RunIdRole) return qlonglong(r.id);
  if (role == Qt::DisplayRole) {
    switch (c) {
      case Id:
        return qlonglong(r.id);
      case Started: {
        QString t = QString::fromStdString(r.started_at).replace('T', ' ').remove('Z');
        return t.size() == 19 && t.endsWith(":00") ? t.left(16) : t;  // seconds only when they say something
      }
      case PlanLabel:
        return labels_[size_t(index.row())];
      case Source:
        return QString::fromStdString(r.source);
      case Steps:
        return QString("%1/%2").arg(sm.steps_measured).arg(sm.steps_total);
      case Mfu:
        return formatPercent(sm.mfu);
      case PredictedMfu:
        return sm.predicted_mfu > 0 ? formatPercent(sm.predicted_mfu) : QString("-");
      case VsPrediction:
        return sm.predicted_mfu > 0 ? QString("%1%2").arg(vs >= 0 ? "+" : "").arg(formatPercent(vs)) : QString("-");
      case Status:
        return status_[size_t(index.row())];
      case Tags: {
        QStringList t;
        for (const auto& s : r.tags) t << QString::fromStdString(s);
        return t.join(", ");
      }
    }
  }
  if (role == SortRole) {
    switch (c) {
      case Id:
        return qlonglong(r.id);
      case Steps:
        return sm.steps_measured;
      case Mfu:
        return sm.mfu;
      case PredictedMfu:
        return sm.predicted_mfu;
      case VsPrediction:
        return vs;
      default:
        return data(index, Qt::DisplayRole);
    }
  }
  if (role == Qt::ForegroundRole && status_[size_t(index.row())] == "regression") return QBrush(QColor(190, 30, 30));
  if (role == Qt::ToolTipRole) return QString::fromStdString(runs::plan_label(r.plan) + "\n" + r.plan_key);
  return {};
}

QVariant RunsListModel::headerData(int section, Qt::Orientation o, int role) const {
  static const char* names[ColumnCount] = {"ID",       "Started", "Plan",  "MFU",    "Predicted",
                                           "vs pred.", "Status",  "Steps", "Source", "Tags"};
  if (o == Qt::Horizontal && role == Qt::DisplayRole && section >= 0 && section < ColumnCount) return QString(names[section]);
  return {};
}

// ---- OpTimingModel ----------------------------------------------------------------------------

OpTimingModel::OpTimingModel(QObject* parent) : RowsModel(ColumnCount, parent) {}

void OpTimingModel::setRun(const runs::RunRecord& run) {
  beginResetModel();
  run_id_ = run.id;
  rows_ = run.ops;
  std::stable_sort(rows_.begin(), rows_.end(), [](const auto& a, const auto& b) { return a.measured_s > b.measured_s; });
  endResetModel();
}

void OpTimingModel::clear() {
  beginResetModel();
  rows_.clear();
  run_id_ = 0;
  endResetModel();
}

QVariant OpTimingModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const auto& o = rows_[size_t(index.row())];
  double err = o.predicted_s > 0 ? (o.predicted_s - o.measured_s) / o.measured_s : 0.0;
  bool hasPred = o.predicted_s > 0 && o.measured_s > 0;
  switch (index.column()) {
    case Op:
      if (role == Qt::DisplayRole || role == ValueRole) return QString::fromStdString(o.op);
      break;
    case Calls:
      if (role == Qt::DisplayRole || role == ValueRole) return qlonglong(o.calls);
      break;
    case Predicted:
      if (role == ValueRole) return o.predicted_s;
      if (role == Qt::DisplayRole) return o.predicted_s > 0 ? formatTime(o.predicted_s) : QString("-");
      break;
    case Measured:
      if (role == ValueRole) return o.measured_s;
      if (role == Qt::DisplayRole) return formatTime(o.measured_s);
      break;
    case Error:
      if (role == ValueRole) return err;
      if (role == Qt::DisplayRole)
        return hasPred ? QString("%1%2").arg(err >= 0 ? "+" : "").arg(formatPercent(err)) : QString("-");
      break;
  }
  if (role == Qt::TextAlignmentRole && index.column() != Op) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant OpTimingModel::headerData(int section, Qt::Orientation o, int role) const {
  static const char* names[ColumnCount] = {"op", "calls", "predicted", "measured", "prediction error"};
  if (o == Qt::Horizontal && role == Qt::DisplayRole && section >= 0 && section < ColumnCount) return QString(names[section]);
  return {};
}

}  // namespace mplan::gui
