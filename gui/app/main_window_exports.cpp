// The main window's file operations: open a plan file or runs database, save the current plan,
// export its Chrome trace, copy its Megatron-LM arguments. Every problem becomes a banner message.
#include <QApplication>
#include <QClipboard>
#include <QFile>
#include <QFileInfo>
#include <QStatusBar>

#include "gui/app/inputs_panel.h"
#include "gui/app/main_window.h"
#include "gui/app/runs_panel.h"

namespace mplan::gui {

bool MainWindow::openPlanFile(const QString& path) {
  auto plan = read_plan_file(path.toStdString());
  if (!plan) {
    showBanner(QString("Could not open the plan file %1:\n%2").arg(path, QString::fromStdString(plan.error().message())));
    return false;
  }
  auto rep = simulate(plan.value(), calibration_.params_for(plan->cluster.gpu));
  if (!rep) {
    showBanner(QString("The plan file %1 could not be simulated:\n%2").arg(path, QString::fromStdString(rep.error().message())));
    return false;
  }
  JobInputs in = inputs_->inputs();
  in.model = plan->model.name;
  in.cluster = plan->cluster.name;
  in.gpus = plan->parallel.world_size;
  in.global_batch = plan->training.global_batch_size;
  in.seq_length = plan->training.seq_length;
  in.precision = std::string(to_string(plan->training.precision));
  inputs_->setInputs(in);
  searched_ = inputs_->inputs();  // the results now are this plan's
  updateOutOfDate();
  showCandidates({Candidate{plan.value(), rep.value()}});
  selectBestShown();
  showBanner(QString("Showing the plan file %1 (not a search result).").arg(QFileInfo(path).fileName()), false);
  return true;
}

bool MainWindow::openRunsDatabase(const QString& path) {
  bool ok = runs_->openDatabase(path);
  if (!ok)
    showBanner(runs_->message());
  else
    showBanner({});
  showTab(RunsTab);
  return ok;
}

bool MainWindow::savePlanTo(const QString& path) {
  if (!current_) {
    showBanner("Select a plan in the results table first.");
    return false;
  }
  Plan p = current_->plan;
  p.meta["written_by"] = "mplan-gui";
  p.meta["prediction"] = report_to_json(current_->report);
  Status st = write_plan_file(path.toStdString(), p);
  if (!st) {
    showBanner(QString("Could not write the plan file %1:\n%2").arg(path, QString::fromStdString(st.error().message())));
    return false;
  }
  return true;
}

bool MainWindow::exportTraceTo(const QString& path) {
  if (!current_ || current_trace_.trace.empty()) {
    showBanner("Select a plan in the results table first.");
    return false;
  }
  QFile f(path);
  QByteArray bytes = QByteArray::fromStdString(trace_to_json(current_trace_, current_->plan).dump());
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(bytes) != bytes.size()) {
    showBanner(QString("Could not write the trace to %1: %2").arg(path, f.errorString()));
    return false;
  }
  return true;
}

QString MainWindow::copyMegatronArgs() {
  if (!current_) {
    showBanner("Select a plan in the results table first.");
    return {};
  }
  auto args = megatronArgs(current_->plan);
  if (!args) {
    showBanner(QString::fromStdString(args.error().message()));
    return {};
  }
  QString text = QString::fromStdString(args.value());
  QApplication::clipboard()->setText(text);
  statusBar()->showMessage("Megatron-LM arguments copied to the clipboard.", 5000);
  setDetails("<h3>Megatron-LM arguments (copied to the clipboard)</h3><pre>" + text.toHtmlEscaped() + "</pre>");
  return text;
}

}  // namespace mplan::gui
