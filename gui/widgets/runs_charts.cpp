// Charts of the runs view (see runs_charts.h).
#include "gui/widgets/runs_charts.h"

#include <QDateTime>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QDateTimeAxis>
#include <QtCharts/QHorizontalBarSeries>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>
#include <map>

#include "core/plan.h"
#include "gui/models/format.h"
#include "gui/models/time_to_pixel.h"
#include "gui/widgets/palette.h"

namespace mplan::gui {

namespace {

// The runs view's charts are small: narrow margins, a smaller minimum size.
constexpr int kMargin = 4;
constexpr QSize kMinimum = {280, 200};

qint64 msecs(const std::string& iso) {
  QDateTime t = QDateTime::fromString(QString::fromStdString(iso), Qt::ISODate);
  if (!t.isValid()) t = QDateTime::fromString(QString::fromStdString(iso).left(10), "yyyy-MM-dd");
  return t.isValid() ? t.toMSecsSinceEpoch() : 0;
}

void hideLegend(QChart* c, QAbstractSeries* s) {
  for (QLegendMarker* m : c->legend()->markers(s)) m->setVisible(false);
}

}  // namespace

// Equal, nice ranges for both axes of a square plot.
static void niceRange(double& lo, double& hi, int& ticks) {
  auto t = niceTicks(lo, hi, 6);
  double step = t.size() > 1 ? t[1] - t[0] : std::max(1.0, hi - lo);
  lo = std::floor(lo / step) * step;
  hi = std::ceil(hi / step) * step;
  ticks = int(std::lround((hi - lo) / step)) + 1;
}

// ---- MfuHistoryChart --------------------------------------------------------------------------

MfuHistoryChart::MfuHistoryChart(QWidget* parent) : ChartView(parent, kMargin, kMinimum) { setSnapshot({}); }

void MfuHistoryChart::setSnapshot(const RunsSnapshot& s) {
  QChart* c = clearedChart();
  regressions_ = nullptr;
  plans_ = int(s.regress.plans.size());
  if (plans_ == 0) {
    c->setTitle("MFU over time: open a runs database (File ▸ Open runs database)");
    return;
  }
  c->setTitle(QString("<b>MFU over time per plan</b>%1 — measured (solid), predicted (dashed), regressions marked")
                  .arg(singleModel(s) && !s.runs.empty()
                           ? QString(" (%1)").arg(QString::fromStdString(
                                 s.runs.front().plan.value("model", nlohmann::json::object()).value("name", "")))
                           : QString()));
  const bool withModel = !singleModel(s);
  std::map<int64_t, const runs::RunRecord*> byId;
  for (const auto& r : s.runs) byId[r.id] = &r;
  auto* x = new QDateTimeAxis;
  x->setFormat("MMM d");
  x->setTitleText("run start");
  auto* y = new QValueAxis;
  y->setTitleText("MFU (%)");
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  qint64 t0 = 0, t1 = 0;
  double lo = 100, hi = 0;
  regressions_ = new QScatterSeries;
  regressions_->setName("regression");
  regressions_->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
  regressions_->setMarkerSize(16);
  regressions_->setColor(regressionColor());
  regressions_->setBorderColor(regressionColor().darker(140));
  int i = 0;
  for (const auto& p : s.regress.plans) {
    auto* meas = new QLineSeries;
    auto* pred = new QLineSeries;
    QColor col = seriesColor(i++);
    QString label = p.history.empty() || !byId.count(p.history.back().run_id)
                        ? QString::fromStdString(p.label)
                        : runPlanLabel(byId[p.history.back().run_id]->plan, withModel);
    meas->setName(label);
    meas->setPen(QPen(col, 2.2));
    meas->setPointsVisible(true);
    pred->setPen(QPen(col.lighter(115), 1.6, Qt::DashLine));
    for (const auto& h : p.history) {
      qint64 t = msecs(h.started_at);
      if (t == 0) continue;
      t0 = t0 == 0 ? t : std::min(t0, t);
      t1 = std::max(t1, t);
      meas->append(double(t), h.mfu * 100);
      lo = std::min(lo, h.mfu * 100), hi = std::max(hi, h.mfu * 100);
      if (h.predicted_mfu > 0) {
        pred->append(double(t), h.predicted_mfu * 100);
        lo = std::min(lo, h.predicted_mfu * 100), hi = std::max(hi, h.predicted_mfu * 100);
      }
      if (s.regression_ids.count(h.run_id)) regressions_->append(double(t), h.mfu * 100);
    }
    for (QLineSeries* ls : {meas, pred}) {
      c->addSeries(ls);
      ls->attachAxis(x);
      ls->attachAxis(y);
    }
    hideLegend(c, pred);
  }
  c->addSeries(regressions_);
  regressions_->attachAxis(x);
  regressions_->attachAxis(y);
  if (regressions_->count() == 0) hideLegend(c, regressions_);
  qint64 pad = std::max<qint64>(qint64(86400000), (t1 - t0) / 20);
  x->setRange(QDateTime::fromMSecsSinceEpoch(t0 - pad), QDateTime::fromMSecsSinceEpoch(t1 + pad));
  x->setTickCount(std::clamp(int((t1 - t0) / 86400000 / 7) + 2, 3, 9));
  double span = std::max(1.0, hi - lo);
  y->setRange(std::max(0.0, lo - span * 0.25), std::min(100.0, hi + span * 0.25));
  y->setLabelFormat("%.1f");
  y->applyNiceNumbers();
}

// ---- PredictedMeasuredChart -------------------------------------------------------------------

PredictedMeasuredChart::PredictedMeasuredChart(QWidget* parent) : ChartView(parent, kMargin, kMinimum) { setSnapshot({}); }

void PredictedMeasuredChart::setSnapshot(const RunsSnapshot& s) {
  QChart* c = clearedChart();
  points_ = 0;
  double lo = 100, hi = 0;
  std::map<std::string, QScatterSeries*> byPlan;
  std::vector<QScatterSeries*> order;
  std::map<std::string, int> planIndex;
  for (size_t i = 0; i < s.regress.plans.size(); ++i) planIndex[s.regress.plans[i].plan_key] = int(i);
  for (auto it = s.runs.rbegin(); it != s.runs.rend(); ++it) {
    const auto& r = *it;
    if (r.summary.predicted_mfu <= 0 || r.summary.mfu <= 0) continue;
    QScatterSeries*& ser = byPlan[r.plan_key];
    if (!ser) {
      ser = new QScatterSeries;
      int idx = planIndex.count(r.plan_key) ? planIndex[r.plan_key] : int(order.size());
      ser->setName(runPlanLabel(r.plan, !singleModel(s)));
      ser->setColor(seriesColor(idx));
      ser->setBorderColor(seriesColor(idx).darker(140));
      ser->setMarkerSize(11);
      order.push_back(ser);
    }
    double px = r.summary.predicted_mfu * 100, my = r.summary.mfu * 100;
    ser->append(px, my);
    lo = std::min({lo, px, my}), hi = std::max({hi, px, my});
    ++points_;
  }
  if (points_ == 0) {
    c->setTitle(s.runs.empty() ? "Predicted vs measured MFU: no runs"
                               : "Predicted vs measured MFU: no run has a stored prediction");
    for (auto* ser : order) delete ser;
    return;
  }
  c->setTitle("<b>Measured vs predicted MFU</b> per run (colours as in MFU over time)");
  double span = std::max(2.0, hi - lo);
  lo = std::max(0.0, lo - span * 0.1), hi = std::min(100.0, hi + span * 0.1);
  int ticks = 5;
  niceRange(lo, hi, ticks);
  auto* x = new QValueAxis;
  x->setTitleText("predicted MFU (%)");
  auto* y = new QValueAxis;
  y->setTitleText("measured MFU (%)");
  for (QValueAxis* a : {x, y}) {
    a->setRange(lo, hi);
    a->setTickCount(ticks);
    a->setLabelFormat("%.0f");
  }
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  auto* diag = new QLineSeries;
  diag->setName("measured = predicted");
  diag->setPen(QPen(QColor(90, 90, 90), 1.5, Qt::DashLine));
  diag->append(lo, lo);
  diag->append(hi, hi);
  auto* band = new QLineSeries;
  band->setName("±10%");
  band->setPen(QPen(QColor(170, 170, 170), 1, Qt::DotLine));
  band->append(lo, lo * 0.9);
  band->append(hi, hi * 0.9);
  auto* band2 = new QLineSeries;
  band2->setPen(band->pen());
  band2->append(lo, lo * 1.1);
  band2->append(hi, hi * 1.1);
  for (QAbstractSeries* ser : std::initializer_list<QAbstractSeries*>{diag, band, band2}) {
    c->addSeries(ser);
    ser->attachAxis(x);
    ser->attachAxis(y);
  }
  hideLegend(c, band2);
  for (auto* ser : order) {
    c->addSeries(ser);
    ser->attachAxis(x);
    ser->attachAxis(y);
    hideLegend(c, ser);  // the plans are named in the MFU-over-time legend
  }
}

// ---- OpCompareChart ---------------------------------------------------------------------------

OpCompareChart::OpCompareChart(QWidget* parent) : ModelChart(parent, kMargin, kMinimum) { rebuild(); }

void OpCompareChart::rebuild() {
  QChart* c = clearedChart();
  ops_ = 0;
  if (!model_ || model_->rowCount() == 0) {
    c->setTitle(model_ && model_->runId() ? QString("Run #%1 has no per-op timings").arg(model_->runId())
                                          : QString("Per-op times: select a run"));
    return;
  }
  const auto& ops = model_->ops();  // largest measured first
  ops_ = std::min(int(ops.size()), kMaxOps);
  double maxT = 0;
  for (int i = 0; i < ops_; ++i) maxT = std::max({maxT, ops[size_t(i)].measured_s, ops[size_t(i)].predicted_s});
  const bool ms = maxT >= 1e-3;
  const double scale = ms ? 1e3 : 1e6;
  auto* pred = new QBarSet("predicted");
  auto* meas = new QBarSet("measured");
  pred->setColor(QColor("#9ECAE9"));
  pred->setBorderColor(QColor("#6B9AC4"));
  meas->setColor(QColor("#4C78A8"));
  meas->setBorderColor(QColor("#345A80"));
  QStringList cats;
  for (int i = ops_ - 1; i >= 0; --i) {  // largest at the top
    cats << QString::fromStdString(ops[size_t(i)].op);
    *pred << ops[size_t(i)].predicted_s * scale;
    *meas << ops[size_t(i)].measured_s * scale;
  }
  auto* series = new QHorizontalBarSeries;
  series->append(pred);
  series->append(meas);
  series->setBarWidth(0.8);
  c->addSeries(series);
  c->setTitle(QString("<b>Per-op time, run #%1</b>: predicted vs measured").arg(model_->runId()));
  auto* y = new QBarCategoryAxis;
  y->append(cats);
  c->addAxis(y, Qt::AlignLeft);
  series->attachAxis(y);
  auto* x = new QValueAxis;
  x->setTitleText(ms ? "time per step (ms)" : "time per step (us)");
  x->setRange(0, maxT * scale * 1.08);
  x->setLabelFormat("%.0f");
  x->applyNiceNumbers();
  c->addAxis(x, Qt::AlignBottom);
  series->attachAxis(x);
}

}  // namespace mplan::gui
