// The job inputs of the main window: model (preset or file), cluster (preset or file), GPUs, global
// batch, sequence length, precision, method, constraints (--fix/--max), top K, objective; the Search
// and Cancel buttons with the progress bar and the search statistics line. Enter in any field starts
// the search; every edit emits inputsChanged (the window marks older results out of date). Numbers
// accept 0 so that the window can say what is wrong instead of the field silently reverting.
#pragma once
#include <QWidget>

#include "gui/models/job_inputs.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace mplan::gui {

class InputsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit InputsPanel(QWidget* parent = nullptr);
  JobInputs inputs() const;
  void setInputs(const JobInputs& in);
  void setModelFile(const QString& path);
  void setClusterFile(const QString& path);
  // Search running: Search disabled, Cancel enabled, progress shown.
  void setRunning(bool running);
  void setProgress(int permille);
  // The search ended: the bar shows "done", "cancelled" or "failed" (0% unless done).
  void setFinished(const QString& how, bool done);
  void setStatusText(const QString& text);
  QPushButton* searchButton() const { return search_; }
  QPushButton* cancelButton() const { return cancel_; }
  QProgressBar* progressBar() const { return progress_; }
  QSpinBox* gpusBox() const { return gpus_; }

 protected:
  bool eventFilter(QObject* watched, QEvent* e) override;

 signals:
  void searchRequested();
  void cancelRequested();
  void inputsChanged();

 private:
  QComboBox *model_, *cluster_, *precision_, *method_, *objective_;
  QSpinBox *gpus_, *gbs_, *seq_, *topk_;
  QLineEdit *fix_, *max_;
  QCheckBox* across_nvlink_;
  QPushButton *search_, *cancel_;
  QProgressBar* progress_;
  QLabel* status_;
};

}  // namespace mplan::gui
