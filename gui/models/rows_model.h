// The base of the GUI's table models: a flat table over a vector of rows with a fixed number of
// columns. It answers the row and column counts (none under a valid parent); each model writes its
// own data() and headerData().
#pragma once
#include <QAbstractTableModel>
#include <vector>

namespace mplan::gui {

template <class Row>
class RowsModel : public QAbstractTableModel {
 public:
  int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : int(rows_.size()); }
  int columnCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : columns_; }

 protected:
  RowsModel(int columns, QObject* parent) : QAbstractTableModel(parent), columns_(columns) {}
  std::vector<Row> rows_;

 private:
  int columns_;
};

}  // namespace mplan::gui
