// The main window's tab layouts (see tab_layout.h).
#include "gui/app/tab_layout.h"

#include <QHeaderView>
#include <QVBoxLayout>

namespace mplan::gui {

QTableView* makeTable(QAbstractItemModel* model) {
  auto* t = new QTableView;
  t->setModel(model);
  t->setAlternatingRowColors(true);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->verticalHeader()->setVisible(false);
  t->horizontalHeader()->setStretchLastSection(true);
  t->setWordWrap(false);
  return t;
}

QSplitter* verticalSplit(QWidget* top, QWidget* bottom, int top_share, int bottom_share) {
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(top);
  split->addWidget(bottom);
  split->setStretchFactor(0, top_share);
  split->setStretchFactor(1, bottom_share);
  return split;
}

QSplitter* chartOverTable(QWidget* chart, QAbstractItemModel* model) {
  auto* table = makeTable(model);
  table->setSelectionMode(QAbstractItemView::NoSelection);
  table->horizontalHeader()->setStretchLastSection(false);
  QObject::connect(model, &QAbstractItemModel::modelReset, table, [table] { table->resizeColumnsToContents(); });
  return verticalSplit(chart, table, 4, 1);
}

QWidget* pageBelowControls(QLayout* controls, QWidget* body, QWidget* between) {
  auto* w = new QWidget;
  auto* v = new QVBoxLayout(w);
  v->addLayout(controls);
  if (between) v->addWidget(between);
  v->addWidget(body, 1);
  return w;
}

}  // namespace mplan::gui
