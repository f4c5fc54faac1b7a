// The runs view (see runs_panel.h).
#include "gui/app/runs_panel.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "gui/widgets/runs_charts.h"

namespace mplan::gui {

RunsPanel::RunsPanel(QWidget* parent) : QWidget(parent) {
  runs_ = new RunsListModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(runs_);
  proxy_->setSortRole(RunsListModel::SortRole);
  ops_ = new OpTimingModel(this);

  auto* open = new QPushButton("Open runs database…");
  connect(open, &QPushButton::clicked, this, &RunsPanel::openRequested);
  path_label_ = new QLabel("No runs database open.");
  path_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  message_ = new QLabel;
  message_->setWordWrap(true);
  message_->setVisible(false);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* top = new QHBoxLayout;
  top->addWidget(open);
  top->addWidget(path_label_, 1);

  history_ = new MfuHistoryChart;
  scatter_ = new PredictedMeasuredChart;
  opsChart_ = new OpCompareChart;
  opsChart_->setModel(ops_);
  table_ = new QTableView;
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(RunsListModel::Id, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunsPanel::onRunSelected);

  auto* upper = new QSplitter(Qt::Horizontal);
  upper->addWidget(history_);
  upper->addWidget(scatter_);
  upper->setStretchFactor(0, 3);
  upper->setStretchFactor(1, 2);
  auto* lower = new QSplitter(Qt::Horizontal);
  lower->addWidget(table_);
  lower->addWidget(opsChart_);
  lower->setStretchFactor(0, 3);
  lower->setStretchFactor(1, 2);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(upper);
  split->addWidget(lower);
  split->setStretchFactor(0, 5);
  split->setStretchFactor(1, 4);
  split->setSizes({520, 480});
  upper->setSizes({600, 400});
  lower->setSizes({560, 440});

  auto* v = new QVBoxLayout(this);
  v->addLayout(top);
  v->addWidget(message_);
  v->addWidget(split, 1);
}

RunsPanel::~RunsPanel() = default;

QString RunsPanel::message() const { return message_->isHidden() ? QString() : message_->text(); }

void RunsPanel::showMessage(const QString& text, bool error) {
  message_->setText(text);
  message_->setStyleSheet(error ? "QLabel { background: #FDECEA; color: #8A1F11; border: 1px solid #E0A09A; padding: 6px; }"
                                : "QLabel { background: #EEF5FB; color: #1F4E79; border: 1px solid #A9C7E3; padding: 6px; }");
  message_->setVisible(!text.isEmpty());
  if (error) emit errorOccurred(text);
}

bool RunsPanel::openDatabase(const QString& path) {
  auto db = runs::RunsDb::open_existing(path.toStdString());
  if (!db) {
    showMessage(QString("Could not open the runs database:\n%1").arg(QString::fromStdString(db.error().message())), true);
    return false;
  }
  auto snap = loadRunsSnapshot(*db.value());
  if (!snap) {
    showMessage(QString("Could not read the runs database %1:\n%2").arg(path, QString::fromStdString(snap.error().message())),
                true);
    return false;
  }
  db_ = std::move(db).value();
  path_ = path;
  path_label_->setText(QString("<b>%1</b> — %2 runs of %3 plans")
                           .arg(QFileInfo(path).fileName().toHtmlEscaped())
                           .arg(snap->runs.size())
                           .arg(snap->regress.plans.size()));
  path_label_->setToolTip(path);
  runs_->setSnapshot(snap.value());
  history_->setSnapshot(snap.value());
  scatter_->setSnapshot(snap.value());
  ops_->clear();
  table_->resizeColumnsToContents();
  int regressions = snap->regress.regressions();
  if (snap->runs.empty())
    showMessage("The database holds no runs yet.", false);
  else if (regressions > 0)
    showMessage(QString("%1 plan%2 regressed in the latest run (baseline: median of the previous 5 runs, threshold 5%).")
                    .arg(regressions)
                    .arg(regressions > 1 ? "s" : ""),
                true);
  else
    showMessage({}, false);
  // the latest run (a regressed one first) so the per-op chart is not empty
  int64_t pick = snap->runs.empty() ? 0 : snap->runs.front().id;
  for (const auto& p : snap->regress.plans)
    if (p.failed()) pick = p.latest_id;
  if (pick) selectRun(pick);
  return true;
}

bool RunsPanel::selectRun(int64_t id) {
  int row = runs_->rowOfRun(id);
  if (row < 0) return false;
  QModelIndex idx = proxy_->mapFromSource(runs_->index(row, 0));
  table_->selectRow(idx.row());
  table_->scrollTo(idx);
  return ops_->runId() == id;
}

void RunsPanel::onRunSelected() {
  auto rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty() || !db_) return;
  int64_t id = rows.front().data(RunsListModel::RunIdRole).toLongLong();
  auto run = db_->get_run(id);
  if (!run) {
    showMessage(QString("Could not read run #%1: %2").arg(id).arg(QString::fromStdString(run.error().message())), true);
    ops_->clear();
    return;
  }
  ops_->setRun(run.value());
}

}  // namespace mplan::gui
