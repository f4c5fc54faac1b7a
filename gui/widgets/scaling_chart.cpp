// The scaling curve (see scaling_chart.h).
#include "gui/widgets/scaling_chart.h"

#include <QtCharts/QLegend>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>

#include "gui/models/format.h"

namespace mplan::gui {

ScalingChart::ScalingChart(QWidget* parent) : ModelChart(parent, 6, {360, 240}) { rebuild(); }

void ScalingChart::rebuild() {
  QChart* c = clearedChart();
  line_ = mfu_ = nullptr;
  points_ = nullptr;
  rows_.clear();
  const int n = model_ ? model_->rowCount() : 0;
  auto at = [&](int r, int col) { return model_->index(r, col).data(ScalingModel::ValueRole); };
  for (int r = 0; r < n; ++r)
    if (at(r, ScalingModel::TokensPerS).isValid()) rows_.push_back(r);
  if (rows_.empty()) {
    c->setTitle(n == 0 ? "Scaling: give GPU counts (256..4096 or 256,512,1024) and press Sweep"
                       : "Scaling: no GPU count of the sweep has a layout that fits");
    return;
  }
  c->setTitle(QString("<b>Scaling</b> — %1: the best layout of each GPU count (click a point for its results)")
                  .arg(QString::fromStdString(model_->job().model.name).toHtmlEscaped()));
  line_ = new QLineSeries;
  line_->setName("tokens/s (all GPUs)");
  points_ = new QScatterSeries;
  points_->setMarkerSize(10);
  points_->setName("best layout (click)");
  mfu_ = new QLineSeries;
  mfu_->setName("MFU %");
  mfu_->setPen(QPen(QColor(200, 110, 20), 2, Qt::DashLine));
  double top = 0, lo = 1e30, hi = 0, mfu_top = 0;
  for (int r : rows_) {
    const double g = at(r, ScalingModel::Gpus).toDouble(), t = at(r, ScalingModel::TokensPerS).toDouble();
    const double m = 100 * at(r, ScalingModel::Mfu).toDouble();
    line_->append(g, t);
    points_->append(g, t);
    mfu_->append(g, m);
    top = std::max(top, t);
    mfu_top = std::max(mfu_top, m);
    lo = std::min(lo, g);
    hi = std::max(hi, g);
  }
  connect(points_, &QScatterSeries::clicked, this, [this](const QPointF& p) {
    for (int row : rows_)
      if (model_ && std::abs(model_->index(row, ScalingModel::Gpus).data(ScalingModel::ValueRole).toDouble() - p.x()) < 0.5)
        emit pointClicked(row);
  });
  c->addSeries(line_);
  c->addSeries(points_);
  c->addSeries(mfu_);
  auto* x = new QLogValueAxis;
  x->setBase(2);
  x->setLabelFormat("%.0f");
  x->setTitleText("GPUs");
  x->setRange(lo / 1.4, hi * 1.4);
  c->addAxis(x, Qt::AlignBottom);
  auto* y = new QValueAxis;
  y->setTitleText("tokens/s");
  setNiceRange(y, top * 1.1);
  y->setLabelFormat("%.3g");
  c->addAxis(y, Qt::AlignLeft);
  auto* y2 = new QValueAxis;
  y2->setTitleText("MFU %");
  setNiceRange(y2, std::max(10.0, mfu_top * 1.2));
  y2->setLabelFormat("%.0f");
  c->addAxis(y2, Qt::AlignRight);
  for (QAbstractSeries* s : {static_cast<QAbstractSeries*>(line_), static_cast<QAbstractSeries*>(points_)}) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
  mfu_->attachAxis(x);
  mfu_->attachAxis(y2);
}

}  // namespace mplan::gui
