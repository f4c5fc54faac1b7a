// The main window of mplan-gui: inputs on the left; tabs Results (sortable, filterable table, details),
// Timeline, Breakdown (selected plans side by side), Memory, Runs and Scaling (main_window_scaling.cpp:
// the best layout per GPU count and the time to train); a message banner for problems;
// File/Edit/View menus with the exports (plan file, Megatron-LM arguments, Chrome trace).
// Methods without dialogs (openPlanFile, savePlanTo ...) serve the menus, the tests and --screenshot.
#pragma once
#include <QFutureWatcher>
#include <QMainWindow>
#include <optional>

#include "gui/models/breakdown_models.h"
#include "gui/models/job_inputs.h"
#include "gui/models/results_model.h"
#include "gui/models/scaling_model.h"
#include "gui/models/search_controller.h"
#include "gui/models/timeline_data.h"

class QLabel;
class QLineEdit;
class QCheckBox;
class QTabWidget;
class QTableView;
class QTextBrowser;

namespace mplan::gui {

class InputsPanel;
class TimelineView;
class BreakdownChart;
class MemoryChart;
class RunsPanel;
class ScalingChart;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  enum Tab { ResultsTab, TimelineTab, BreakdownTab, MemoryTab, RunsTab, ScalingTab };
  static constexpr int kMaxCompared = 8;

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  InputsPanel* inputsPanel() const { return inputs_; }
  SearchController* searchController() const { return controller_; }
  ResultsModel* resultsModel() const { return results_; }
  ResultsFilterModel* resultsProxy() const { return proxy_; }
  QTableView* resultsView() const { return table_; }
  QLineEdit* filterEdit() const { return filter_; }
  TimelineView* timelineView() const { return timeline_; }
  BreakdownChart* breakdownChart() const { return breakdown_chart_; }
  MemoryChart* memoryChart() const { return memory_chart_; }
  TimeBreakdownModel* breakdownModel() const { return breakdown_; }
  MemoryModel* memoryModel() const { return memory_; }
  RunsPanel* runsPanel() const { return runs_; }
  QTabWidget* tabs() const { return tabs_; }
  ScalingModel* scalingModel() const { return scaling_; }
  ScalingChart* scalingChart() const { return scaling_chart_; }
  QLineEdit* sweepGpusEdit() const { return sweep_gpus_; }
  QLineEdit* sweepTokensEdit() const { return sweep_tokens_; }
  QString bannerText() const;
  bool bannerIsError() const { return banner_error_; }
  // True when the inputs differ from those of the results shown (the results are out of date).
  bool resultsOutOfDate() const;
  QString outOfDateText() const;
  QAction* searchAction() const { return search_action_; }
  QAction* cancelAction() const { return cancel_action_; }
  QString detailsText() const;
  // The plan shown in the timeline and memory views, if any.
  const Candidate* currentPlan() const { return current_ ? &*current_ : nullptr; }

  void showTab(Tab t);
  // Starts a search with the panel's inputs; false (and a banner) when the inputs are bad.
  bool startSearch();
  // Searches the panel's job for every GPU count of the Scaling tab (256..4096 or 256,512,1024) and plots
  // the curve; false (and a banner) when the inputs or the counts are bad.
  bool startSweep();
  // Shows row `row` of the sweep (one GPU count) in the results table and selects its best layout.
  bool showSweepRow(int row);
  // Selects result rows by rank (0 = best) in the table; the first is the current plan.
  void selectRanks(const std::vector<int>& ranks);
  // Selects the best result the filter shows; with none shown, the plan views stay empty and the
  // details say that the filter hides the results. False when nothing is shown.
  bool selectBestShown();
  bool openPlanFile(const QString& path);
  bool openRunsDatabase(const QString& path);
  bool savePlanTo(const QString& path);
  bool exportTraceTo(const QString& path);
  // Copies the Megatron-LM arguments of the current plan to the clipboard; returns them ("" on error).
  QString copyMegatronArgs();
  // Waits (processing events) until the current plan's timeline and explanation, computed in the
  // background, arrived.
  bool waitForBackgroundWork(int timeout_ms);

 protected:
  void closeEvent(QCloseEvent* e) override;

 private slots:
  void onSearchFinished(const mplan::gui::SearchOutcome& outcome);
  void onSelectionChanged();

 private:
  void buildMenus();
  QWidget* buildResultsTab();
  QWidget* buildTimelineTab();
  QWidget* buildBreakdownTab();
  QWidget* buildMemoryTab();
  QWidget* buildScalingTab();
  void onSweepFinished(const mplan::gui::SearchOutcome& outcome);
  // The panel's job and search options; a banner and nullopt when the inputs are bad.
  std::optional<std::pair<Plan, SearchOptions>> searchJob(JobInputs& in);
  void showBanner(const QString& text, bool error = true);
  void showCandidates(std::vector<Candidate> candidates);
  // The groups of a search result (the best of each, and with "Show folded layouts" their members).
  void showResult(const SearchResult& result);
  void clearPlanViews();
  void updateOutOfDate();
  void showPlan(const Candidate& c, int rank);
  void updateFilterInfo();
  void requestExplanation(const Candidate& c);
  void setDetails(const QString& html);
  void updateActions();

  InputsPanel* inputs_;
  SearchController* controller_;
  ResultsModel* results_;
  ResultsFilterModel* proxy_;
  TimeBreakdownModel* breakdown_;
  MemoryModel* memory_;
  QLabel *banner_, *filter_info_, *plan_header_, *out_of_date_;
  bool banner_error_ = false;
  std::optional<JobInputs> searched_;  // the inputs of the results shown (none: no search yet)
  JobInputs pending_inputs_;           // the inputs of the running search
  QString shown_status_;               // the search statistics of the results shown
  QLineEdit* filter_;
  QCheckBox* expand_;                         // Show folded layouts
  std::optional<SearchResult> shown_result_;  // the search result on screen (for expand)
  QTableView* table_;
  QTextBrowser* details_;
  QTabWidget* tabs_;
  TimelineView* timeline_;
  BreakdownChart* breakdown_chart_;
  MemoryChart* memory_chart_;
  RunsPanel* runs_;
  ScalingModel* scaling_ = nullptr;
  ScalingChart* scaling_chart_ = nullptr;
  QLineEdit *sweep_gpus_ = nullptr, *sweep_tokens_ = nullptr;
  QLabel* sweep_info_ = nullptr;
  QAction *save_plan_, *export_trace_, *copy_megatron_, *search_action_, *cancel_action_;
  Calibration calibration_;
  std::optional<Candidate> current_;
  int current_rank_ = 1;
  StepReport current_trace_;  // the current plan simulated with its timeline
  QString shown_plan_key_;    // plan JSON of what the timeline and memory views show
  QFutureWatcher<QString> explain_watcher_;
  struct TraceOutcome {
    QString key, title, label;
    QString error;  // empty = ok
    StepReport report;
    TimelineData timeline;
  };
  void onTraceReady();
  QFutureWatcher<TraceOutcome> trace_watcher_;
  QString pending_plan_key_;  // plan whose timeline is being simulated
  int explain_seq_ = 0;
  QString explain_text_;
};

}  // namespace mplan::gui
