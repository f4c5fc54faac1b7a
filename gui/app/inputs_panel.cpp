// The job inputs of the main window (see inputs_panel.h).
#include "gui/app/inputs_panel.h"

#include <QAbstractItemView>
#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include "core/presets.h"

namespace mplan::gui {

namespace {

QComboBox* presetCombo(const std::vector<std::string>& names, const QString& tip) {
  auto* c = new QComboBox;
  c->setEditable(true);
  c->setInsertPolicy(QComboBox::NoInsert);
  for (const auto& n : names) c->addItem(QString::fromStdString(n));
  c->setToolTip(tip);
  c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  c->setMinimumContentsLength(10);
  return c;
}

QWidget* withBrowse(QComboBox* combo, QWidget* parent, const QString& title, const QString& filter) {
  auto* w = new QWidget;
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(0, 0, 0, 0);
  h->setSpacing(4);
  h->addWidget(combo, 1);
  auto* b = new QToolButton;
  b->setText("…");
  b->setToolTip(title);
  QObject::connect(b, &QToolButton::clicked, parent, [=] {
    QString f = QFileDialog::getOpenFileName(parent, title, QString(), filter);
    if (!f.isEmpty()) combo->setCurrentText(f);
  });
  h->addWidget(b);
  return w;
}

QSpinBox* spin(int lo, int hi, int step, const QString& tip) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);
  s->setSingleStep(step);
  s->setGroupSeparatorShown(true);
  s->setToolTip(tip);
  return s;
}

}  // namespace

InputsPanel::InputsPanel(QWidget* parent) : QWidget(parent) {
  model_ = presetCombo(model_preset_names(), "A model preset, or the path of an mplan model JSON or a Hugging Face config.json");
  cluster_ = presetCombo(cluster_preset_names(), "A cluster preset, or the path of an mplan cluster JSON");
  gpus_ = spin(0, 1 << 20, 8, "GPUs of the job");
  gbs_ = spin(0, 1 << 24, 64, "Global batch size in sequences per optimizer step");
  seq_ = spin(0, 1 << 22, 1024, "Sequence length in tokens");
  precision_ = new QComboBox;
  for (const char* p : {"bf16", "fp16", "fp8", "mxfp8", "nvfp4", "fp32"}) precision_->addItem(p);
  method_ = new QComboBox;
  for (const char* m : {"pretrain", "sft", "lora"}) method_->addItem(m);
  fix_ = new QLineEdit;
  fix_->setPlaceholderText("e.g. tp=8,pp=4");
  fix_->setToolTip("Fixed sizes (keys tp, pp, vpp, cp, ep, etp, dp, mbs, zero, recompute_layers)");
  max_ = new QLineEdit;
  max_->setPlaceholderText("e.g. tp=8,pp=32");
  max_->setToolTip("Upper bounds (same keys as Fix)");
  topk_ = spin(1, 500, 5, "How many of the best layouts to keep");
  objective_ = new QComboBox;
  objective_->addItem("throughput");
  objective_->addItem("memory headroom");
  across_nvlink_ = new QCheckBox("TP may span NVLink domains");

  auto* form = new QFormLayout;
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form->addRow("Model", withBrowse(model_, this, "Open a model (mplan JSON or HF config.json)", "JSON (*.json);;All files (*)"));
  form->addRow("Cluster", withBrowse(cluster_, this, "Open a cluster JSON", "JSON (*.json);;All files (*)"));
  form->addRow("GPUs", gpus_);
  form->addRow("Global batch", gbs_);
  form->addRow("Sequence length", seq_);
  form->addRow("Precision", precision_);
  form->addRow("Method", method_);
  form->addRow("Fix", fix_);
  form->addRow("Max", max_);
  form->addRow("Top K", topk_);
  form->addRow("Objective", objective_);
  form->addRow(QString(), across_nvlink_);

  search_ = new QPushButton("Search");
  search_->setDefault(true);
  search_->setToolTip("Search every layout of this job (runs in the background)");
  cancel_ = new QPushButton("Cancel");
  cancel_->setEnabled(false);
  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setFormat("%p%");
  status_ = new QLabel;
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_->setStyleSheet("color: #444;");
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(search_, 1);
  buttons->addWidget(cancel_);

  auto* v = new QVBoxLayout(this);
  v->addLayout(form);
  v->addSpacing(6);
  v->addLayout(buttons);
  v->addWidget(progress_);
  v->addWidget(status_);
  v->addStretch(1);
  connect(search_, &QPushButton::clicked, this, &InputsPanel::searchRequested);
  connect(cancel_, &QPushButton::clicked, this, &InputsPanel::cancelRequested);
  setInputs(JobInputs{});
  // every edit is a change; Enter in any field searches
  for (QComboBox* c : {model_, cluster_, precision_, method_, objective_})
    connect(c, &QComboBox::currentTextChanged, this, &InputsPanel::inputsChanged);
  for (QSpinBox* b : {gpus_, gbs_, seq_, topk_}) connect(b, &QSpinBox::valueChanged, this, &InputsPanel::inputsChanged);
  for (QLineEdit* e : {fix_, max_}) connect(e, &QLineEdit::textChanged, this, &InputsPanel::inputsChanged);
  connect(across_nvlink_, &QCheckBox::toggled, this, &InputsPanel::inputsChanged);
  for (QWidget* w : findChildren<QWidget*>())
    if (qobject_cast<QComboBox*>(w) || qobject_cast<QSpinBox*>(w) || qobject_cast<QLineEdit*>(w) || qobject_cast<QCheckBox*>(w))
      w->installEventFilter(this);
}

bool InputsPanel::eventFilter(QObject* watched, QEvent* e) {
  if (e->type() == QEvent::KeyPress) {
    auto* k = static_cast<QKeyEvent*>(e);
    bool enter = (k->key() == Qt::Key_Return || k->key() == Qt::Key_Enter) && !(k->modifiers() & Qt::ControlModifier);
    auto* combo = qobject_cast<QComboBox*>(watched);
    if (enter && !(combo && combo->view() && combo->view()->isVisible()) && search_->isEnabled()) {
      emit searchRequested();
      return true;
    }
  }
  return QWidget::eventFilter(watched, e);
}

JobInputs InputsPanel::inputs() const {
  JobInputs in;
  in.model = model_->currentText().trimmed().toStdString();
  in.cluster = cluster_->currentText().trimmed().toStdString();
  in.gpus = gpus_->value();
  in.global_batch = gbs_->value();
  in.seq_length = seq_->value();
  in.precision = precision_->currentText().toStdString();
  in.method = method_->currentText().toStdString();
  in.fix = fix_->text().toStdString();
  in.max = max_->text().toStdString();
  in.top_k = topk_->value();
  in.memory_objective = objective_->currentIndex() == 1;
  in.allow_tp_across_nvlink = across_nvlink_->isChecked();
  return in;
}

void InputsPanel::setInputs(const JobInputs& in) {
  model_->setCurrentText(QString::fromStdString(in.model));
  cluster_->setCurrentText(QString::fromStdString(in.cluster));
  gpus_->setValue(in.gpus);
  gbs_->setValue(int(in.global_batch));
  seq_->setValue(int(in.seq_length));
  precision_->setCurrentText(QString::fromStdString(in.precision));
  method_->setCurrentText(QString::fromStdString(in.method));
  fix_->setText(QString::fromStdString(in.fix));
  max_->setText(QString::fromStdString(in.max));
  topk_->setValue(in.top_k);
  objective_->setCurrentIndex(in.memory_objective ? 1 : 0);
  across_nvlink_->setChecked(in.allow_tp_across_nvlink);
}

void InputsPanel::setModelFile(const QString& path) { model_->setCurrentText(path); }

void InputsPanel::setClusterFile(const QString& path) { cluster_->setCurrentText(path); }

void InputsPanel::setRunning(bool running) {
  search_->setEnabled(!running);
  cancel_->setEnabled(running);
  if (running) {
    progress_->setFormat("%p%");
    progress_->setValue(0);
  }
}

void InputsPanel::setProgress(int permille) {
  progress_->setFormat("%p%");
  progress_->setValue(permille);
}

void InputsPanel::setFinished(const QString& how, bool done) {
  progress_->setValue(done ? progress_->maximum() : 0);
  progress_->setFormat(how);
}

void InputsPanel::setStatusText(const QString& text) { status_->setText(text); }

}  // namespace mplan::gui
