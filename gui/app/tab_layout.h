// How the main window's tabs are laid out: a table of a model, a chart over its model's table, a
// vertical split, and a page of controls above its content.
#pragma once
#include <QAbstractItemModel>
#include <QLayout>
#include <QSplitter>
#include <QTableView>

namespace mplan::gui {

// A read-only table of `model`: whole rows selected, alternating colours, no row numbers.
QTableView* makeTable(QAbstractItemModel* model);
// A vertical splitter: `top` over `bottom`, sharing the height top_share : bottom_share.
QSplitter* verticalSplit(QWidget* top, QWidget* bottom, int top_share, int bottom_share);
// A chart over the table of the model it draws (no selection; columns fit their contents after
// each reset of the model).
QSplitter* chartOverTable(QWidget* chart, QAbstractItemModel* model);
// A tab page: a row of controls, then `between` (when given), then `body` taking the rest.
QWidget* pageBelowControls(QLayout* controls, QWidget* body, QWidget* between = nullptr);

}  // namespace mplan::gui
