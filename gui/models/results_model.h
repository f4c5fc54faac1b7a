// The search results table (the columns of `mplan search`) and its sort/filter proxy.
//   ResultsModel        one row per candidate, best first (each group's best with the number of layouts
//                       folded into it; with expand, the members below it); DisplayRole text, SortRole numbers
//   ResultsFilterModel  sorts by the numbers; filters by free text and KEY OP VALUE terms
#pragma once
#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QStringList>
#include <vector>

#include "gui/models/rows_model.h"
#include "planner/planner.h"

namespace mplan::gui {

class ResultsModel : public RowsModel<Candidate> {
  Q_OBJECT
 public:
  enum Column {
    Rank,
    Tp,
    Sp,
    Pp,
    Vpp,
    Dp,
    Cp,
    Ep,
    Etp,
    Zero,
    Mbs,
    RecomputeCol,
    ScheduleCol,
    StepTime,
    Interval,
    TokensPerGpu,
    Mfu,
    Memory,
    Bubble,
    ExposedComm,
    Folded,
    ColumnCount
  };
  // Numbers in the units of the filter: seconds, tokens/s, percent, GiB.
  static constexpr int SortRole = Qt::UserRole;
  // The row's index in the candidate list (stable through sorting/filtering).
  static constexpr int CandidateRole = Qt::UserRole + 1;

  explicit ResultsModel(QObject* parent = nullptr);
  void setCandidates(std::vector<Candidate> candidates);
  // The groups of a search: each best ("3", with "+N" folded) and, with `expand`, its members ("3.2" ...).
  void setResult(const SearchResult& result, bool expand);
  void clear() { setCandidates({}); }
  const Candidate& candidate(int row) const { return rows_[size_t(row)]; }
  const std::vector<Candidate>& candidates() const { return rows_; }
  // "3" for a group's best, "3.2" for its second member (the Rank column's text)
  QString rankLabel(int row) const { return labels_[size_t(row)]; }
  // Short names used in filter terms: "tp", "mfu", "step" ...
  static QString filterKey(int column);

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  QVariant display(const Candidate& c, int row, int column) const;
  QVariant sortValue(const Candidate& c, int row, int column) const;
  std::vector<QString> labels_;  // rank text per row
  std::vector<int> folded_;      // layouts folded into the row (group bests only)
};

class ResultsFilterModel : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit ResultsFilterModel(QObject* parent = nullptr);
  // Whitespace-separated terms, all must hold: "tp=2", "mfu>=40", "pp<4", "selective", "recompute!=full".
  // Words without an operator match any cell's text. Bad terms are ignored and reported.
  void setFilterText(const QString& text);
  QString filterText() const { return text_; }
  QString filterError() const { return error_; }

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  struct Term {
    int column = -1;  // -1: free text
    QString op;       // = != < <= > >=
    QString text;
    double number = 0;
    bool numeric = false;
  };
  bool accepts(const Term& t, int source_row) const;
  QString text_, error_;
  std::vector<Term> terms_;
};

}  // namespace mplan::gui
