// Memory per stage against the capacity line (see memory_chart.h).
#include "gui/widgets/memory_chart.h"

#include <QCursor>
#include <QToolTip>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>

#include "gui/models/format.h"
#include "gui/widgets/palette.h"

namespace mplan::gui {

MemoryChart::MemoryChart(QWidget* parent) : ModelChart(parent, 6, {360, 260}) { rebuild(); }

void MemoryChart::rebuild() {
  QChart* c = clearedChart();
  bars_ = nullptr;
  capacity_ = nullptr;
  totals_ = nullptr;
  const int n = rowsOr("Memory per stage: select a plan in the results table");
  if (n == 0) return;
  const double cap = model_->capacityGiB();
  double maxTotal = 0;
  for (int r = 0; r < n; ++r)
    maxTotal = std::max(maxTotal, model_->index(r, MemoryModel::TotalColumn).data(MemoryModel::ValueRole).toDouble());
  c->setTitle(QString("<b>Peak memory per pipeline stage</b> — %1 (worst rank of each stage; %2 of %3 at most)")
                  .arg(model_->label().toHtmlEscaped(), formatGiB(maxTotal), formatGiB(cap, 0)));

  bars_ = new QStackedBarSeries;
  bars_->setBarWidth(n == 1 ? 0.3 : 0.65);
  for (int k = 0; k < MemoryModel::kKinds; ++k) {
    const int col = MemoryModel::FirstKindColumn + k;
    bool any = false;
    for (int r = 0; r < n; ++r) any = any || model_->index(r, col).data(MemoryModel::ValueRole).toDouble() > 0;
    if (!any) continue;
    auto* set = new QBarSet(MemoryModel::kindName(k));
    set->setColor(memoryKindColor(k));
    set->setBorderColor(memoryKindColor(k).darker(125));
    for (int r = 0; r < n; ++r) *set << model_->index(r, col).data(MemoryModel::ValueRole).toDouble();
    connect(set, &QBarSet::hovered, this, [this, k, col](bool on, int i) {
      if (!on || !model_ || i < 0 || i >= model_->rowCount()) return QToolTip::hideText();
      double v = model_->index(i, col).data(MemoryModel::ValueRole).toDouble();
      double tot = model_->index(i, MemoryModel::TotalColumn).data(MemoryModel::ValueRole).toDouble();
      QToolTip::showText(QCursor::pos(), QString("<b>stage %1 — %2</b>: %3<br>stage total %4 of %5")
                                             .arg(i)
                                             .arg(MemoryModel::kindName(k), formatGiB(v, 2), formatGiB(tot, 2),
                                                  formatGiB(model_->capacityGiB(), 0)));
    });
    bars_->append(set);
  }
  c->addSeries(bars_);

  capacity_ = new QLineSeries;
  capacity_->setName(QString("GPU capacity %1").arg(formatGiB(cap, 0)));
  capacity_->setPen(QPen(capacityColor(), 2.5, Qt::DashLine));
  capacity_->append(-0.5, cap);
  capacity_->append(n - 0.5, cap);
  c->addSeries(capacity_);

  totals_ = new QScatterSeries;
  totals_->setName("total");
  totals_->setMarkerSize(1);
  totals_->setColor(Qt::transparent);
  totals_->setBorderColor(Qt::transparent);
  totals_->setPointLabelsVisible(true);
  totals_->setPointLabelsFormat("@yPoint GiB");
  totals_->setPointLabelsClipping(false);
  QFont tf = font();
  tf.setBold(true);
  totals_->setPointLabelsFont(tf);
  for (int r = 0; r < n; ++r)
    totals_->append(r, std::round(model_->index(r, MemoryModel::TotalColumn).data(MemoryModel::ValueRole).toDouble() * 10) / 10);
  c->addSeries(totals_);
  for (QLegendMarker* m : c->legend()->markers(totals_)) m->setVisible(false);

  QStringList cats;
  for (int r = 0; r < n; ++r)
    cats << QString("stage %1<br>%2 layers").arg(r).arg(model_->index(r, 1).data(MemoryModel::ValueRole).toInt());
  auto* x = new QBarCategoryAxis;
  x->append(cats);
  c->addAxis(x, Qt::AlignBottom);
  bars_->attachAxis(x);
  capacity_->attachAxis(x);
  totals_->attachAxis(x);
  auto* y = new QValueAxis;
  y->setTitleText("GiB per GPU");
  setNiceRange(y, std::max(cap, maxTotal) * 1.08);
  y->setLabelFormat("%.0f");
  c->addAxis(y, Qt::AlignLeft);
  bars_->attachAxis(y);
  capacity_->attachAxis(y);
  totals_->attachAxis(y);
}

}  // namespace mplan::gui
