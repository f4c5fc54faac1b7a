// Pixel metrics of the timeline view, shared by its behaviour (timeline_view.cpp) and its painting
// (timeline_paint.cpp).
#pragma once

namespace mplan::gui::timeline_metrics {

constexpr int kMargin = 8;
constexpr int kTitleH = 20;     // title row
constexpr int kSummaryH = 18;   // step summary row
constexpr int kOverviewH = 30;  // overview strip of the whole step
constexpr int kAxisH = 24;      // time ruler
constexpr int kHeaderW = 150;   // lane headers
constexpr int kComputeH = 42;
constexpr int kCommH = 15;
constexpr int kLaneGap = 3;
constexpr int kStageGap = 9;
constexpr int kLegendH = 28;
constexpr int kScrollW = 12;         // the lanes' vertical scroll bar
constexpr int kMaxFlowsDrawn = 160;  // more visible transfers than this: no arrows (zoom in)
constexpr int kWheelStepPx = 48;     // lanes scrolled per wheel notch

}  // namespace mplan::gui::timeline_metrics
