// The charts' shared base (see chart_view.h).
#include "gui/widgets/chart_view.h"

#include <QtCharts/QLegend>
#include <QtCharts/QValueAxis>
#include <cmath>

#include "gui/models/time_to_pixel.h"

namespace mplan::gui {

ChartView::ChartView(QWidget* parent, int margin, QSize minimum) : QChartView(parent) {
  setRenderHint(QPainter::Antialiasing);
  chart()->legend()->setAlignment(Qt::AlignBottom);
  chart()->setMargins(QMargins(margin, margin, margin, margin));
  setMinimumSize(minimum);
}

void ChartView::follow(QAbstractItemModel* model) {
  if (followed_) QObject::disconnect(followed_, nullptr, this, nullptr);
  followed_ = model;
  if (model) {
    connect(model, &QAbstractItemModel::modelReset, this, [this] { rebuild(); });
    connect(model, &QAbstractItemModel::dataChanged, this, [this] { rebuild(); });
  }
  rebuild();
}

QChart* ChartView::clearedChart() {
  QChart* c = chart();
  c->removeAllSeries();
  for (QAbstractAxis* a : c->axes()) {
    c->removeAxis(a);
    delete a;
  }
  return c;
}

void setNiceRange(QValueAxis* axis, double max) {
  if (!(max > 0)) max = 1;
  auto ticks = niceTicks(0, max, 6);
  double step = ticks.size() > 1 ? ticks[1] - ticks[0] : max;
  double top = std::ceil(max / step - 1e-9) * step;
  axis->setRange(0, top);
  axis->setTickCount(int(std::lround(top / step)) + 1);
}

}  // namespace mplan::gui
