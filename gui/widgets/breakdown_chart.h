// Stacked bars of where each compared plan's step time goes (compute, recompute, exposed TP/CP/EP/DP/
// PP communication, bubble, optimizer), plans side by side, with MFU as a line on a second axis.
// Reads a TimeBreakdownModel and rebuilds on every reset.
#pragma once
#include "gui/models/breakdown_models.h"
#include "gui/widgets/chart_view.h"

class QStackedBarSeries;
class QScatterSeries;

namespace mplan::gui {

class BreakdownChart : public ModelChart<TimeBreakdownModel> {
  Q_OBJECT
 public:
  explicit BreakdownChart(QWidget* parent = nullptr);
  QStackedBarSeries* barSeries() const { return bars_; }
  QScatterSeries* mfuSeries() const { return mfu_; }

 private:
  void rebuild() override;
  QStackedBarSeries* bars_ = nullptr;
  QScatterSeries* mfu_ = nullptr;
};

}  // namespace mplan::gui
