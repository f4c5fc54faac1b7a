// The job inputs of the main window: model (preset or file), cluster (preset or file), GPUs, global
// batch, sequence length, precision, method, constraints (--fix/--max), top K, objective; the Search
// and Cancel buttons with the progress bar and the search statistics line.
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
  void setStatusText(const QString& text);
  QPushButton* searchButton() const { return search_; }
  QPushButton* cancelButton() const { return cancel_; }
  QProgressBar* progressBar() const { return progress_; }

 signals:
  void searchRequested();
  void cancelRequested();

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
