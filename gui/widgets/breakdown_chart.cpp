// Step-time breakdown and MFU chart (see breakdown_chart.h).
#include "gui/widgets/breakdown_chart.h"

#include <QCursor>
#include <QToolTip>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QLegend>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>

#include "gui/models/format.h"
#include "gui/widgets/palette.h"

namespace mplan::gui {

BreakdownChart::BreakdownChart(QWidget* parent) : ModelChart(parent, 6, {360, 260}) { rebuild(); }

void BreakdownChart::rebuild() {
  QChart* c = clearedChart();
  bars_ = nullptr;
  mfu_ = nullptr;
  const int n = rowsOr("Step time breakdown: select one or more plans in the results table");
  if (n == 0) return;
  const auto& plans = model_->plans();
  double maxStep = 0, maxMfu = 0;
  for (const auto& p : plans) maxStep = std::max(maxStep, p.report.step_time_s), maxMfu = std::max(maxMfu, p.report.mfu);
  const bool ms = maxStep < 2.0;
  const double scale = ms ? 1e3 : 1.0;
  c->setTitle(QString("<b>Where the step time goes</b> — %1 plan%2 side by side (exposed communication only; MFU on the right)")
                  .arg(n)
                  .arg(n > 1 ? "s" : ""));

  bars_ = new QStackedBarSeries;
  bars_->setBarWidth(n == 1 ? 0.35 : 0.6);
  for (int k = 0; k < TimeBreakdownModel::kComponents; ++k) {
    bool any = false;
    for (const auto& p : plans) any = any || TimeBreakdownModel::componentValue(p.report, k) > 0;
    if (!any) continue;
    auto* set = new QBarSet(TimeBreakdownModel::componentName(k));
    set->setColor(componentColor(k));
    set->setBorderColor(componentColor(k).darker(125));
    for (const auto& p : plans) *set << TimeBreakdownModel::componentValue(p.report, k) * scale;
    connect(set, &QBarSet::hovered, this, [this, k](bool on, int i) {
      if (!on || !model_ || i < 0 || i >= model_->rowCount()) return QToolTip::hideText();
      const auto& e = model_->plans()[size_t(i)];
      double v = TimeBreakdownModel::componentValue(e.report, k);
      QToolTip::showText(QCursor::pos(), QString("<b>%1</b>: %2 (%3 of the step)<br>%4")
                                             .arg(TimeBreakdownModel::componentName(k), formatTime(v),
                                                  formatPercent(e.report.step_time_s > 0 ? v / e.report.step_time_s : 0),
                                                  e.label.toHtmlEscaped()));
    });
    bars_->append(set);
  }
  c->addSeries(bars_);

  mfu_ = new QScatterSeries;
  mfu_->setName("MFU");
  mfu_->setMarkerShape(QScatterSeries::MarkerShapeRotatedRectangle);
  mfu_->setMarkerSize(13);
  mfu_->setColor(QColor(25, 25, 25));
  mfu_->setBorderColor(Qt::white);
  mfu_->setPointLabelsVisible(true);
  mfu_->setPointLabelsColor(QColor(25, 25, 25));
  mfu_->setPointLabelsFormat("MFU @yPoint%");
  mfu_->setPointLabelsClipping(false);
  QFont lf = font();
  lf.setBold(true);
  mfu_->setPointLabelsFont(lf);
  for (int i = 0; i < n; ++i) mfu_->append(i, std::round(plans[size_t(i)].report.mfu * 1000.0) / 10.0);
  c->addSeries(mfu_);

  // two lines per plan: "#1 tp4 sp pp8 vpp12" / "dp4 mbs2 z2" (labels are rich text)
  QStringList cats;
  for (const auto& p : plans) {
    QStringList words = p.label.split(' ');
    int half = (int(words.size()) + 1) / 2;
    cats << words.mid(0, half).join(' ') + "<br>" + words.mid(half).join(' ');
  }
  auto* x = new QBarCategoryAxis;
  x->append(cats);
  c->addAxis(x, Qt::AlignBottom);
  bars_->attachAxis(x);
  mfu_->attachAxis(x);

  auto* y = new QValueAxis;
  y->setTitleText(ms ? "time per step (ms)" : "time per step (s)");
  setNiceRange(y, maxStep * scale * 1.06);
  y->setLabelFormat(ms ? "%.0f" : "%.1f");
  c->addAxis(y, Qt::AlignLeft);
  bars_->attachAxis(y);

  auto* y2 = new QValueAxis;
  y2->setTitleText("MFU (%)");
  setNiceRange(y2, std::min(100.0, std::max(10.0, maxMfu * 100 * 1.25)));
  y2->setLabelFormat("%.0f");
  c->addAxis(y2, Qt::AlignRight);
  mfu_->attachAxis(y2);
}

}  // namespace mplan::gui
