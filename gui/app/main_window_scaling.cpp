// The main window's Scaling tab: the panel's job searched for several GPU counts (256..4096 or
// 256,512,1024), the curve of each count's best layout (tokens/s and MFU over GPUs, ScalingChart), its
// table with the time to train a token budget (ScalingModel), and one click from a point or a row to
// that count's ranked results.
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QVBoxLayout>

#include "gui/app/inputs_panel.h"
#include "gui/app/main_window.h"
#include "gui/app/tab_layout.h"
#include "gui/models/format.h"
#include "gui/widgets/scaling_chart.h"

namespace mplan::gui {

QWidget* MainWindow::buildScalingTab() {
  scaling_ = new ScalingModel(this);
  scaling_chart_ = new ScalingChart;
  scaling_chart_->setModel(scaling_);
  sweep_gpus_ = new QLineEdit("256..4096");
  sweep_gpus_->setToolTip("GPU counts to search: a list 256,512,1024 or a range of powers of two 256..4096");
  sweep_tokens_ = new QLineEdit;
  sweep_tokens_->setPlaceholderText("e.g. 15T (optional)");
  sweep_tokens_->setToolTip(
      "Token budget of the whole run: days to train, ideal and with the expected interruptions and checkpoints "
      "(Llama 3's failure rate, 600 s restarts, 2 TB/s checkpoint writes; mplan search --train-tokens)");
  auto* sweep = new QPushButton("Sweep");
  sweep->setToolTip("Search the inputs' job for each GPU count (the other inputs as they are)");
  connect(sweep, &QPushButton::clicked, this, [this] { startSweep(); });
  connect(sweep_gpus_, &QLineEdit::returnPressed, this, [this] { startSweep(); });
  connect(sweep_tokens_, &QLineEdit::returnPressed, this, [this] { startSweep(); });
  sweep_info_ = new QLabel;
  sweep_info_->setWordWrap(true);
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel("GPU counts"));
  row->addWidget(sweep_gpus_, 1);
  row->addWidget(new QLabel("Tokens"));
  row->addWidget(sweep_tokens_, 1);
  row->addWidget(sweep);
  auto* table = new QTableView;
  table->setModel(scaling_);
  table->setAlternatingRowColors(true);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->verticalHeader()->setVisible(false);
  table->horizontalHeader()->setStretchLastSection(true);
  table->setToolTip("Click a GPU count to see its ranked layouts in Results");
  connect(scaling_, &QAbstractItemModel::modelReset, table, [table] { table->resizeColumnsToContents(); });
  connect(table, &QTableView::clicked, this, [this](const QModelIndex& i) { showSweepRow(i.row()); });
  connect(scaling_chart_, &ScalingChart::pointClicked, this, [this](int r) { showSweepRow(r); });
  return pageBelowControls(row, verticalSplit(scaling_chart_, table, 3, 2), sweep_info_);
}

bool MainWindow::startSweep() {
  if (controller_->isRunning()) return false;
  JobInputs in;
  auto job = searchJob(in);
  if (!job) return false;
  auto counts = parse_gpu_counts(sweep_gpus_->text().trimmed().toStdString(), "GPU counts", job->first.cluster.max_gpus());
  if (!counts) {
    showBanner("Cannot sweep: " + QString::fromStdString(counts.error().message()));
    return false;
  }
  if (!sweep_tokens_->text().trimmed().isEmpty()) {
    auto t = parse_token_count(sweep_tokens_->text().trimmed().toStdString(), "Tokens");
    if (!t) {
      showBanner("Cannot sweep: " + QString::fromStdString(t.error().message()));
      return false;
    }
  }
  showBanner({});
  inputs_->setRunning(true);
  inputs_->setStatusText(QString("Sweeping %1 GPU counts …").arg(counts->size()));
  statusBar()->showMessage("Sweeping…");
  showTab(ScalingTab);
  const bool started = controller_->startSweep(job->first, *counts, calibration_, job->second);
  updateActions();
  return started;
}

void MainWindow::onSweepFinished(const SearchOutcome& o) {
  double tokens = 0;
  if (auto t = parse_token_count(sweep_tokens_->text().trimmed().toStdString(), "Tokens")) tokens = *t;
  scaling_->setSweep(o.sweep, o.job, tokens);
  inputs_->setFinished(!o.ok ? "failed" : o.result.cancelled ? "cancelled" : "done", o.ok && !o.result.cancelled);
  inputs_->setStatusText(shown_status_);
  if (!o.ok) {
    statusBar()->showMessage("Sweep failed.", 5000);
    showBanner("The sweep failed:\n" + QString::fromStdString(panelWording(o.error.toStdString())));
    return;
  }
  double wall = 0;
  for (const ScalePoint& p : o.sweep) wall += p.result.stats.wall_s;
  sweep_info_->setText(QString("%1 GPU counts searched in %2 s%3. Click a point or a row for that count's ranked layouts.")
                           .arg(o.sweep.size())
                           .arg(wall, 0, 'f', 2)
                           .arg(o.result.cancelled ? " (cancelled)" : ""));
  statusBar()->showMessage(o.result.cancelled ? "Sweep cancelled." : "Sweep done.", 5000);
}

bool MainWindow::showSweepRow(int row) {
  if (row < 0 || row >= scaling_->rowCount()) return false;
  const ScalePoint& p = scaling_->points()[size_t(row)];
  if (p.result.top.empty()) {
    showBanner(QString("No layout fits on %1 GPUs.").arg(p.gpus));
    return false;
  }
  JobInputs in = inputs_->inputs();
  in.gpus = p.gpus;
  inputs_->setInputs(in);
  searched_ = inputs_->inputs();  // the results now are this count's
  updateOutOfDate();
  showResult(p.result);
  selectBestShown();
  showTab(ResultsTab);
  showBanner(QString("Showing the sweep's results for %1 GPUs.").arg(p.gpus), false);
  return true;
}

}  // namespace mplan::gui
