// The main window of mplan-gui (see main_window.h). Exports live in main_window_exports.cpp.
#include "gui/app/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "core/presets.h"
#include "gui/app/inputs_panel.h"
#include "gui/app/runs_panel.h"
#include "gui/app/tab_layout.h"
#include "gui/models/format.h"
#include "gui/models/timeline_data.h"
#include "gui/widgets/breakdown_chart.h"
#include "gui/widgets/memory_chart.h"
#include "gui/widgets/timeline_view.h"

namespace mplan::gui {

namespace {

QString jobLabel(const Plan& p) {
  return QString("%1 on %2 × %3, gbs %4, seq %5, %6")
      .arg(QString::fromStdString(p.model.name))
      .arg(p.parallel.world_size)
      .arg(QString::fromStdString(p.cluster.gpu.name))
      .arg(p.training.global_batch_size)
      .arg(p.training.seq_length)
      .arg(QString::fromStdString(std::string(to_string(p.training.precision))));
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent), calibration_(shipped_calibration()) {
  setWindowTitle("mplan — parallel layout planner");
  controller_ = new SearchController(this);
  results_ = new ResultsModel(this);
  proxy_ = new ResultsFilterModel(this);
  proxy_->setSourceModel(results_);
  breakdown_ = new TimeBreakdownModel(this);
  memory_ = new MemoryModel(this);

  inputs_ = new InputsPanel;
  auto* inputsScroll = new QScrollArea;
  inputsScroll->setWidget(inputs_);
  inputsScroll->setWidgetResizable(true);
  // narrow windows (1024 px laptops) keep the charts: the inputs scroll sideways below 250 px
  inputsScroll->setMinimumWidth(std::min(inputs_->sizeHint().width() + 24, 250));
  inputsScroll->setFrameShape(QFrame::NoFrame);

  banner_ = new QLabel;
  banner_->setWordWrap(true);
  banner_->setVisible(false);
  banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  out_of_date_ = new QLabel;
  out_of_date_->setWordWrap(true);
  out_of_date_->setVisible(false);
  out_of_date_->setStyleSheet("QLabel { background: #FFF4D6; color: #6B4E00; border: 1px solid #E8C97A; padding: 6px; }");
  tabs_ = new QTabWidget;
  tabs_->setUsesScrollButtons(false);
  runs_ = new RunsPanel;
  tabs_->addTab(buildResultsTab(), "Results");
  tabs_->addTab(buildTimelineTab(), "Timeline");
  tabs_->addTab(buildBreakdownTab(), "Breakdown");
  tabs_->addTab(buildMemoryTab(), "Memory");
  tabs_->addTab(runs_, "Runs");
  tabs_->addTab(buildScalingTab(), "Scaling");

  auto* right = new QWidget;
  auto* rv = new QVBoxLayout(right);
  rv->setContentsMargins(0, 0, 0, 0);
  rv->addWidget(banner_);
  rv->addWidget(out_of_date_);
  rv->addWidget(tabs_, 1);
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(inputsScroll);
  split->addWidget(right);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setCollapsible(1, false);
  split->setSizes({inputs_->sizeHint().width() + 24, 1200});
  setCentralWidget(split);
  buildMenus();
  statusBar()->showMessage("Ready.");

  connect(inputs_, &InputsPanel::searchRequested, this, [this] { startSearch(); });
  connect(inputs_, &InputsPanel::inputsChanged, this, &MainWindow::updateOutOfDate);
  connect(inputs_, &InputsPanel::cancelRequested, controller_, &SearchController::cancel);
  connect(controller_, &SearchController::progressChanged, inputs_, &InputsPanel::setProgress);
  connect(controller_, &SearchController::finished, this, &MainWindow::onSearchFinished);
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &MainWindow::onSelectionChanged);
  connect(runs_, &RunsPanel::openRequested, this, [this] {
    QString f = QFileDialog::getOpenFileName(this, "Open runs database", QString(), "SQLite (*.db *.sqlite);;All files (*)");
    if (!f.isEmpty()) openRunsDatabase(f);
  });
  connect(&explain_watcher_, &QFutureWatcher<QString>::finished, this, [this] {
    explain_text_ = explain_watcher_.result();
    if (current_) showPlan(*current_, current_rank_);
  });
  connect(&trace_watcher_, &QFutureWatcher<TraceOutcome>::finished, this, &MainWindow::onTraceReady);
  updateActions();
  QSize size(1500, 950);  // at most the screen's free area (a 1366x768 laptop gets a window that fits)
  if (QScreen* sc = screen()) size = size.boundedTo(sc->availableGeometry().size());
  resize(size);
}

MainWindow::~MainWindow() {
  explain_watcher_.waitForFinished();
  trace_watcher_.waitForFinished();
}

void MainWindow::closeEvent(QCloseEvent* e) {
  controller_->cancel();
  e->accept();
}

// ---- construction -----------------------------------------------------------------------------

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu("&File");
  // Opens a model or cluster file (`kind`), resolves it and, when it is valid, hands it to the inputs.
  auto openSpecFile = [this](const QString& kind, const QString& title, auto resolve, void (InputsPanel::*use)(const QString&)) {
    return [this, kind, title, resolve, use] {
      QString f = QFileDialog::getOpenFileName(this, title, QString(), "JSON (*.json);;All files (*)");
      if (f.isEmpty()) return;
      auto spec = resolve(f.toStdString());
      if (!spec)
        return showBanner(
            QString("Could not use the %1 file %2:\n%3").arg(kind.toLower(), f, QString::fromStdString(spec.error().message())));
      (inputs_->*use)(f);
      showBanner(QString("%1 %2 loaded from %3.").arg(kind, QString::fromStdString(spec->name), f), false);
    };
  };
  file->addAction("Open &model file…", this,
                  openSpecFile(
                      "Model", "Open a model (mplan JSON or Hugging Face config.json)",
                      [](const std::string& f) { return resolve_model(f); }, &InputsPanel::setModelFile));
  file->addAction("Open &cluster file…", this,
                  openSpecFile(
                      "Cluster", "Open a cluster JSON", [](const std::string& f) { return resolve_cluster(f); },
                      &InputsPanel::setClusterFile));
  file->addAction("Open &plan file…", QKeySequence::Open, this, [this] {
    QString f = QFileDialog::getOpenFileName(this, "Open a plan (mplan.plan/1)", QString(), "JSON (*.json);;All files (*)");
    if (!f.isEmpty()) openPlanFile(f);
  });
  file->addAction("Open &runs database…", this, [this] { emit runs_->openRequested(); });
  file->addSeparator();
  save_plan_ = file->addAction("&Save plan file…", QKeySequence::Save, this, [this] {
    QString f = QFileDialog::getSaveFileName(this, "Save plan file", "plan.json", "JSON (*.json)");
    if (!f.isEmpty() && savePlanTo(f)) statusBar()->showMessage("Plan written to " + f, 5000);
  });
  export_trace_ = file->addAction("Export Chrome &trace…", this, [this] {
    QString f = QFileDialog::getSaveFileName(this, "Export Chrome trace (opens in Perfetto)", "trace.json", "JSON (*.json)");
    if (!f.isEmpty() && exportTraceTo(f)) statusBar()->showMessage("Trace written to " + f, 5000);
  });
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);

  QMenu* searchMenu = menuBar()->addMenu("&Search");
  search_action_ = searchMenu->addAction("&Run search", this, [this] { startSearch(); });
  search_action_->setShortcuts({QKeySequence("Ctrl+Return"), QKeySequence("Ctrl+Enter"), QKeySequence(Qt::Key_F5)});
  search_action_->setToolTip("Search with the inputs on the left (Enter in any field, Ctrl+Enter, F5)");
  cancel_action_ = searchMenu->addAction("&Cancel search", controller_, &SearchController::cancel);
  cancel_action_->setShortcut(QKeySequence(Qt::Key_Escape));

  QMenu* edit = menuBar()->addMenu("&Edit");
  copy_megatron_ =
      edit->addAction("Copy &Megatron-LM arguments", QKeySequence("Ctrl+Shift+C"), this, [this] { copyMegatronArgs(); });

  QMenu* view = menuBar()->addMenu("&View");
  view->addAction("Zoom &in (timeline)", QKeySequence::ZoomIn, timeline_, &TimelineView::zoomIn);
  view->addAction("Zoom &out (timeline)", QKeySequence::ZoomOut, timeline_, &TimelineView::zoomOut);
  view->addAction("Show the &whole step (timeline)", QKeySequence("Ctrl+0"), timeline_, &TimelineView::showAll);
  view->addSeparator();
  const char* names[] = {"&Results", "&Timeline", "&Breakdown", "&Memory", "R&uns", "&Scaling"};
  for (int i = 0; i < 6; ++i)
    view->addAction(names[i], QKeySequence(QString("Ctrl+%1").arg(i + 1)), this, [this, i] { showTab(Tab(i)); });
}

QWidget* MainWindow::buildResultsTab() {
  filter_ = new QLineEdit;
  filter_->setPlaceholderText("Filter: words or terms like  tp=2  pp<=4  mfu>40  memory<60  recompute=selective");
  filter_->setClearButtonEnabled(true);
  filter_info_ = new QLabel;
  filter_info_->setStyleSheet("color: #8A1F11;");
  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& t) {
    proxy_->setFilterText(t);
    updateFilterInfo();
    if (!current_ && results_->rowCount() > 0) selectBestShown();  // nothing shown yet: the best one now shown
  });
  table_ = makeTable(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(ResultsModel::Rank, Qt::AscendingOrder);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setToolTip("Select one plan to see it; select several (Ctrl/Shift) to compare them in Breakdown");
  details_ = new QTextBrowser;
  details_->setOpenExternalLinks(false);
  details_->setPlaceholderText("Run a search, then select a plan: its summary and the planner's explanation appear here.");
  expand_ = new QCheckBox("Show folded layouts");
  expand_->setToolTip(
      "Each result stands for the layouts that differ from it only in vpp, the pipeline split or the overlap flags and "
      "whose 80% interval overlaps its own (column Folded); show them below it");
  connect(expand_, &QCheckBox::toggled, this, [this] {
    if (!shown_result_) return;
    const SearchResult r = *shown_result_;
    showResult(r);
    selectBestShown();
  });
  auto* filterRow = new QHBoxLayout;
  filterRow->addWidget(filter_, 1);
  filterRow->addWidget(filter_info_);
  filterRow->addWidget(expand_);
  return pageBelowControls(filterRow, verticalSplit(table_, details_, 3, 2));
}

QWidget* MainWindow::buildTimelineTab() {
  timeline_ = new TimelineView;  // scrolls its lanes itself: the ruler stays pinned
  auto* bar = new QHBoxLayout;
  auto button = [&](const QString& text, const QString& tip, auto slot) {
    auto* b = new QToolButton;
    b->setText(text);
    b->setToolTip(tip);
    connect(b, &QToolButton::clicked, timeline_, slot);
    bar->addWidget(b);
  };
  button("Zoom in", "Zoom in (W, +, Ctrl+wheel)", &TimelineView::zoomIn);
  button("Zoom out", "Zoom out (S, -, Ctrl+wheel)", &TimelineView::zoomOut);
  button("Whole step", "Show the whole step (0, double click)", &TimelineView::showAll);
  button("Zoom to selection", "Drag over the lanes to measure a range, then zoom to it (Z)", &TimelineView::zoomToSelection);
  plan_header_ = new QLabel;
  plan_header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bar->addSpacing(12);
  bar->addWidget(plan_header_, 1);
  return pageBelowControls(bar, timeline_);
}

QWidget* MainWindow::buildBreakdownTab() {
  breakdown_chart_ = new BreakdownChart;
  breakdown_chart_->setModel(breakdown_);
  return chartOverTable(breakdown_chart_, breakdown_);
}

QWidget* MainWindow::buildMemoryTab() {
  memory_chart_ = new MemoryChart;
  memory_chart_->setModel(memory_);
  return chartOverTable(memory_chart_, memory_);
}

// ---- behaviour --------------------------------------------------------------------------------

QString MainWindow::bannerText() const { return banner_->isHidden() ? QString() : banner_->text(); }

QString MainWindow::detailsText() const { return details_->toPlainText(); }

void MainWindow::showTab(Tab t) { tabs_->setCurrentIndex(int(t)); }

void MainWindow::showBanner(const QString& text, bool error) {
  banner_error_ = error && !text.isEmpty();
  banner_->setText(text);
  banner_->setStyleSheet(error ? "QLabel { background: #FDECEA; color: #8A1F11; border: 1px solid #E0A09A; padding: 8px; }"
                               : "QLabel { background: #EEF5FB; color: #1F4E79; border: 1px solid #A9C7E3; padding: 8px; }");
  banner_->setVisible(!text.isEmpty());
}

std::optional<std::pair<Plan, SearchOptions>> MainWindow::searchJob(JobInputs& in) {
  in = inputs_->inputs();
  auto job = buildJob(in);
  auto fix = parseConstraints(in.fix, "Fix");
  auto max = parseConstraints(in.max, "Max");
  QStringList problems;
  for (const Error* e : {job.ok() ? nullptr : &job.error(), fix.ok() ? nullptr : &fix.error(), max.ok() ? nullptr : &max.error()})
    if (e)
      for (const auto& p : e->problems) problems << QString::fromStdString(p);
  if (!problems.isEmpty()) {
    showBanner("Cannot search:\n• " + problems.join("\n• "));
    return std::nullopt;
  }
  SearchOptions opt;
  opt.top_k = in.top_k;
  opt.objective = in.memory_objective ? Objective::memory_headroom : Objective::throughput;
  opt.fix = fix.value();
  opt.max = max.value();
  opt.allow_tp_across_nvlink = in.allow_tp_across_nvlink;
  return std::make_pair(job.value(), opt);
}

bool MainWindow::startSearch() {
  if (controller_->isRunning()) return false;
  JobInputs in;
  auto job = searchJob(in);
  if (!job) return false;
  showBanner({});
  pending_inputs_ = in;
  inputs_->setRunning(true);
  inputs_->setStatusText(QString("Searching %1 …").arg(jobLabel(job->first)));
  statusBar()->showMessage("Searching…");
  bool started = controller_->start(job->first, calibration_, job->second);
  updateActions();
  return started;
}

void MainWindow::onSearchFinished(const SearchOutcome& o) {
  inputs_->setRunning(false);
  updateActions();
  if (o.is_sweep) return onSweepFinished(o);
  const bool keep = results_->rowCount() > 0;  // results of an earlier search on screen
  if (!o.ok) {
    inputs_->setFinished("failed", false);
    inputs_->setStatusText(shown_status_);
    statusBar()->showMessage("Search failed.", 5000);
    showBanner("The search failed:\n" + QString::fromStdString(panelWording(o.error.toStdString())) +
               (keep ? "\nThe results below are those of the previous search." : ""));
    return;
  }
  const SearchStats& st = o.result.stats;
  QString stats = QString("%1<br>%2 layouts enumerated, %3 rejected, %4 pruned, %5 simulated, %6 fit — %7 s%8")
                      .arg(jobLabel(o.job).toHtmlEscaped())
                      .arg(formatCount(double(st.enumerated)))
                      .arg(formatCount(double(st.rejected)))
                      .arg(formatCount(double(st.pruned_by_bound + st.pruned_memory)))
                      .arg(formatCount(double(st.simulated)))
                      .arg(formatCount(double(st.fits)))
                      .arg(st.wall_s, 0, 'f', 2)
                      .arg(o.result.cancelled ? " (cancelled)" : "");
  statusBar()->showMessage(o.result.cancelled ? "Search cancelled." : "Search done.", 5000);
  if (o.result.top.empty() && o.result.cancelled) {
    // nothing new to show: the previous results stay, and say so (not an error)
    inputs_->setFinished("cancelled", false);
    inputs_->setStatusText(shown_status_);
    showBanner(keep ? "Search cancelled before it found a layout: still showing the previous results." +
                          QString(resultsOutOfDate() ? " The inputs changed since those were searched." : "")
                    : QString("Search cancelled before it found a layout."),
               false);
    return;
  }
  inputs_->setStatusText(stats);
  shown_status_ = stats;
  inputs_->setFinished(o.result.cancelled ? "cancelled: best found so far" : "done", !o.result.cancelled);
  searched_ = pending_inputs_;
  updateOutOfDate();
  if (o.result.top.empty()) {
    QString head = "No layout of this job fits: nothing to show.";
    QStringList reasons;
    for (const auto& r : o.result.top_rejection_reasons) reasons << QString::fromStdString(panelWording(r));
    showBanner(reasons.isEmpty() ? head : head + " The most frequent reasons layouts were rejected:\n• " + reasons.join("\n• "));
    showCandidates({});
    QString html = "<h3>" + head.toHtmlEscaped() + "</h3><ul>";
    for (const auto& r : reasons) html += "<li>" + r.toHtmlEscaped() + "</li>";
    setDetails(html + "</ul>");
    return;
  }
  showBanner(o.result.cancelled ? "Search cancelled: showing the best layouts found so far." : QString(), false);
  showResult(o.result);
  selectBestShown();
}

void MainWindow::showResult(const SearchResult& result) {
  shown_result_ = result;
  clearPlanViews();
  results_->setResult(result, expand_->isChecked());
  table_->resizeColumnsToContents();
  updateFilterInfo();
  updateActions();
}

void MainWindow::showCandidates(std::vector<Candidate> candidates) {
  // a new result set: nothing of the previous one may stay in a view, whatever gets selected next
  clearPlanViews();
  shown_result_.reset();
  results_->setCandidates(std::move(candidates));
  table_->resizeColumnsToContents();
  updateFilterInfo();
  updateActions();
}

void MainWindow::clearPlanViews() {
  current_.reset();
  explain_text_.clear();
  breakdown_->setPlans({});
  memory_->clear();
  timeline_->clear();
  plan_header_->clear();
  details_->clear();
  shown_plan_key_.clear();
  pending_plan_key_.clear();
  current_trace_ = {};
  updateActions();
}

bool MainWindow::selectBestShown() {
  int best_row = -1, best = results_->rowCount();
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    int c = proxy_->index(r, 0).data(ResultsModel::CandidateRole).toInt();
    if (c < best) best = c, best_row = r;
  }
  if (best_row < 0) {
    table_->clearSelection();
    if (results_->rowCount() > 0)
      setDetails(QString("<h3>The filter hides all %1 results of this search</h3><p>Filter: <code>%2</code>. Clear or "
                         "change it to see them; the best one is then shown.</p>")
                     .arg(results_->rowCount())
                     .arg(proxy_->filterText().toHtmlEscaped()));
    return false;
  }
  QItemSelection sel(proxy_->index(best_row, 0), proxy_->index(best_row, ResultsModel::ColumnCount - 1));
  table_->selectionModel()->select(sel, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  table_->scrollTo(proxy_->index(best_row, 0));
  return true;
}

bool MainWindow::resultsOutOfDate() const { return searched_ && inputs_->inputs() != *searched_; }

QString MainWindow::outOfDateText() const { return out_of_date_->isHidden() ? QString() : out_of_date_->text(); }

void MainWindow::updateOutOfDate() {
  bool stale = resultsOutOfDate();
  out_of_date_->setText(stale ? "The inputs changed since these results were searched: they are out of date. Press Search "
                                "(Enter in a field, Ctrl+Enter or F5) to update them."
                              : QString());
  out_of_date_->setVisible(stale);
}

void MainWindow::selectRanks(const std::vector<int>& ranks) {
  QItemSelection sel;
  for (int r : ranks) {
    if (r < 0 || r >= results_->rowCount()) continue;
    QModelIndex a = proxy_->mapFromSource(results_->index(r, 0));
    QModelIndex b = proxy_->mapFromSource(results_->index(r, ResultsModel::ColumnCount - 1));
    if (a.isValid()) sel.select(a, b);
  }
  table_->selectionModel()->select(sel, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  if (!sel.isEmpty()) table_->scrollTo(sel.indexes().front());
}

void MainWindow::onSelectionChanged() {
  std::vector<int> rows;
  for (const QModelIndex& i : table_->selectionModel()->selectedRows())
    rows.push_back(i.data(ResultsModel::CandidateRole).toInt());
  if (rows.empty()) return;
  std::sort(rows.begin(), rows.end());
  if (int(rows.size()) > kMaxCompared) {
    statusBar()->showMessage(QString("Comparing the best %1 of the %2 selected plans.").arg(kMaxCompared).arg(rows.size()), 5000);
    rows.resize(kMaxCompared);
  }
  std::vector<TimeBreakdownModel::Entry> entries;
  entries.reserve(rows.size());
  for (int r : rows)
    entries.push_back({QString("#%1 %2").arg(results_->rankLabel(r)).arg(layoutLabel(results_->candidate(r).plan.parallel)),
                       results_->candidate(r).report});
  breakdown_->setPlans(std::move(entries));
  const Candidate& first = results_->candidate(rows.front());
  bool same = current_ && plan_to_json(current_->plan) == plan_to_json(first.plan);
  if (!same) {
    current_ = first;
    explain_text_.clear();
    requestExplanation(first);
  }
  current_rank_ = rows.front() + 1;
  showPlan(*current_, current_rank_);
}

void MainWindow::showPlan(const Candidate& c, int rank) {
  // rank = the row + 1: its label ("3", or "3.2" for a folded layout)
  const QString rank_text = rank >= 1 && rank <= results_->rowCount() ? results_->rankLabel(rank - 1) : QString::number(rank);
  QString label = QString("#%1 %2").arg(rank_text).arg(layoutLabel(c.plan.parallel));
  QString key = QString::fromStdString(plan_to_json(c.plan).dump());
  if (key != shown_plan_key_ && key != pending_plan_key_) {
    // the timeline needs a simulation with the trace: off the UI thread
    pending_plan_key_ = key;
    if (!c.report.per_stage.empty()) memory_->setReport(label, c.report);
    Plan plan = c.plan;
    Calibration cal = calibration_;
    QString title = label + " — " + jobLabel(c.plan);
    trace_watcher_.setFuture(QtConcurrent::run([plan, cal, key, title, label]() {
      TraceOutcome out{key, title, label, {}, {}, {}};
      auto rep = simulateWithTrace(plan, cal);
      if (!rep) {
        out.error = QString::fromStdString(rep.error().message());
        return out;
      }
      out.report = std::move(rep).value();
      out.timeline = buildTimeline(out.report);
      return out;
    }));
  }
  const StepReport& r = c.report;
  plan_header_->setText(QString("<b>%1</b> &nbsp; MFU %2 · %3 tokens/s/GPU · peak %4 of %5")
                            .arg(label.toHtmlEscaped(), formatPercent(r.mfu), formatCount(r.tokens_per_s_per_gpu),
                                 formatGiB(r.peak_memory_gib), formatGiB(r.capacity_gib, 0)));
  QString html =
      QString("<h3>%1</h3><p>%2</p><table cellspacing=6>").arg(label.toHtmlEscaped(), jobLabel(c.plan).toHtmlEscaped());
  auto row = [&](const QString& k, const QString& v) { html += "<tr><td><b>" + k + "</b></td><td>" + v + "</td></tr>"; };
  row("step time", formatTime(r.step_time_s));
  row("MFU", QString("%1 (full-attention FLOPs: %2)").arg(formatPercent(r.mfu), formatPercent(r.mfu_full_attention)));
  row("tokens/s/GPU", formatCount(r.tokens_per_s_per_gpu));
  row("model TFLOP/s/GPU", QString::number(r.model_tflops_per_gpu, 'f', 1));
  row("peak memory", QString("%1 of %2").arg(formatGiB(r.peak_memory_gib), formatGiB(r.capacity_gib, 0)));
  row("micro-batches", QString::number(r.num_microbatches));
  QString bubble = formatPercent(r.bubble_fraction);
  if (r.bottleneck_stage >= 0 && r.step_time_s > 0)
    bubble += QString(" = fill/drain %1 + stage imbalance %2 (critical rank: stage %3; bottleneck: stage %4)")
                  .arg(formatPercent(r.bubble_fill_drain_s / r.step_time_s), formatPercent(r.bubble_imbalance_s / r.step_time_s))
                  .arg(r.critical_stage)
                  .arg(r.bottleneck_stage);
  row("bubble", bubble.toHtmlEscaped());
  if (c.plan.parallel.num_layers_in_first_pipeline_stage || c.plan.parallel.num_layers_in_last_pipeline_stage)
    row("pipeline split", QString("first stage %1 layers, last stage %2 layers")
                              .arg(c.plan.parallel.num_layers_in_first_pipeline_stage)
                              .arg(c.plan.parallel.num_layers_in_last_pipeline_stage));
  html += "</table>";
  if (!r.warnings.empty()) {
    html += "<p><b>Warnings</b></p><ul>";
    for (const auto& w : r.warnings) html += "<li>" + QString::fromStdString(w).toHtmlEscaped() + "</li>";
    html += "</ul>";
  }
  html += "<p><b>Why this plan</b></p><pre>" +
          (explain_text_.isEmpty() ? QString("(the planner is writing its explanation…)") : explain_text_.toHtmlEscaped()) +
          "</pre>";
  setDetails(html);
  updateActions();
}

void MainWindow::onTraceReady() {
  TraceOutcome out = trace_watcher_.result();
  if (out.key != pending_plan_key_) return;  // a newer selection is on its way
  pending_plan_key_.clear();
  if (!out.error.isEmpty()) {
    showBanner("Could not simulate the selected plan:\n" + out.error);
    return;
  }
  current_trace_ = std::move(out.report);
  shown_plan_key_ = out.key;
  timeline_->setTimeline(std::move(out.timeline), out.title);
  if (memory_->rowCount() == 0 || memory_->label() != out.label) memory_->setReport(out.label, current_trace_);
  updateActions();
}

void MainWindow::requestExplanation(const Candidate& c) {
  Plan plan = c.plan;
  Calibration cal = calibration_;
  explain_watcher_.setFuture(QtConcurrent::run([plan, cal]() -> QString {
    auto e = explainPlan(plan, cal);
    return e ? QString::fromStdString(e.value()) : QString::fromStdString(e.error().message());
  }));
}

void MainWindow::updateFilterInfo() {
  bool bad = !proxy_->filterError().isEmpty();
  filter_info_->setText(bad ? proxy_->filterError()
                            : QString("%1 of %2 shown").arg(proxy_->rowCount()).arg(results_->rowCount()));
  filter_info_->setStyleSheet(bad ? "color: #8A1F11;" : "color: #555;");
}

bool MainWindow::waitForBackgroundWork(int timeout_ms) {
  QElapsedTimer t;
  t.start();
  while (!(explain_watcher_.isFinished() && trace_watcher_.isFinished() && pending_plan_key_.isEmpty())) {
    if (t.elapsed() > timeout_ms) return false;
    QEventLoop loop;
    connect(&explain_watcher_, &QFutureWatcher<QString>::finished, &loop, &QEventLoop::quit);
    connect(&trace_watcher_, &QFutureWatcher<TraceOutcome>::finished, &loop, &QEventLoop::quit);
    QTimer::singleShot(50, &loop, &QEventLoop::quit);
    loop.exec();
  }
  QCoreApplication::sendPostedEvents();
  return true;
}

void MainWindow::setDetails(const QString& html) { details_->setHtml(html); }

void MainWindow::updateActions() {
  search_action_->setEnabled(!controller_->isRunning());
  cancel_action_->setEnabled(controller_->isRunning());
  bool have = current_.has_value();
  save_plan_->setEnabled(have);
  export_trace_->setEnabled(have && !current_trace_.trace.empty());
  copy_megatron_->setEnabled(have);
}

}  // namespace mplan::gui
