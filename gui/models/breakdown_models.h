// Table models behind the charts of the plan view:
//   TimeBreakdownModel  a row per compared plan: where its step time goes, step time and MFU
//   MemoryModel         a row per pipeline stage: its memory by kind, against the GPU capacity
// DisplayRole is formatted text; ValueRole the number (seconds, GiB, MFU as 0..1).
#pragma once
#include <QAbstractTableModel>
#include <QString>
#include <vector>

#include "gui/models/rows_model.h"
#include "simulator/simulator.h"

namespace mplan::gui {

// A compared plan of the breakdown: its label and report.
struct BreakdownEntry {
  QString label;
  StepReport report;
};

class TimeBreakdownModel : public RowsModel<BreakdownEntry> {
  Q_OBJECT
 public:
  static constexpr int ValueRole = Qt::UserRole;
  // Columns: 0 plan label, 1 MFU, 2 step time, then the kComponents time components.
  static constexpr int kComponents = 11;
  static constexpr int MfuColumn = 1;
  static constexpr int StepTimeColumn = 2;
  static constexpr int FirstComponentColumn = 3;
  static constexpr int ColumnCount = FirstComponentColumn + kComponents;
  // "compute", "recompute", "TP comm" ... "PP p2p", "fill/drain", "stage imbalance", "optimizer": the
  // time breakdown with the bubble split by cause (simulator/bubbles.h)
  static QString componentName(int k);
  static double componentValue(const StepReport& r, int k);

  using Entry = BreakdownEntry;
  explicit TimeBreakdownModel(QObject* parent = nullptr);
  void setPlans(std::vector<Entry> plans);
  const std::vector<Entry>& plans() const { return rows_; }

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
};

class MemoryModel : public RowsModel<StageReport> {
  Q_OBJECT
 public:
  static constexpr int ValueRole = Qt::UserRole;
  // Columns: 0 stage, 1 layers, 2..2+kKinds-1 memory kinds, then total.
  static constexpr int kKinds = 6;
  static constexpr int FirstKindColumn = 2;
  static constexpr int TotalColumn = FirstKindColumn + kKinds;
  static QString kindName(int k);  // weights, gradients, optimizer, activations, buffers, other
  static double kindValue(const MemoryBreakdown& m, int k);

  explicit MemoryModel(QObject* parent = nullptr);
  void setReport(const QString& label, const StepReport& r);
  void clear();
  double capacityGiB() const { return capacity_; }
  QString label() const { return label_; }

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  double capacity_ = 0;
  QString label_;
};

}  // namespace mplan::gui
