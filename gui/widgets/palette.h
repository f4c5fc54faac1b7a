// Colours of the GUI, one place: pipeline phases and communication streams on the timeline, time
// components of the breakdown chart, memory kinds of the memory chart.
#pragma once
#include <QColor>
#include <QString>

namespace mplan::gui {

// F, B, W, 'O' optimizer; chunk > 0 gets a lighter shade so interleaved chunks are told apart.
QColor phaseColor(char phase, int chunk = 0);
// compute | tp | cp | ep | p2p | dp
QColor streamColor(const QString& stream);
QColor bubbleColor();
// TimeBreakdownModel components 0..8 and MemoryModel kinds 0..5.
QColor componentColor(int k);
QColor memoryKindColor(int k);
QColor capacityColor();
QColor regressionColor();
// A qualitative colour per series index (plans in the runs charts).
QColor seriesColor(int i);

}  // namespace mplan::gui
