// Number formatting shared by the GUI's models and views: times, percentages, sizes, layout labels.
#pragma once
#include <QString>

#include "core/parallel_config.h"

namespace mplan::gui {

// "1.23 s", "45.6 ms", "789 us" — picks the unit from the magnitude.
QString formatTime(double seconds);
// An axis tick label: one unit for all ticks of an axis, chosen from the tick step (s from 0.1 s,
// ms from 0.1 ms ...), and as many decimals as the step needs ("0", "250 ms", "1.25 s").
QString formatTimeTick(double seconds, double step_s);
// "45.2%" of a 0..1 fraction.
QString formatPercent(double fraction, int decimals = 1);
// "61.3 GiB".
QString formatGiB(double gib, int decimals = 1);
// "12,345" with thousands separators.
QString formatCount(double value);
// Compact layout label: "tp2 sp pp4 vpp2 dp8 cp2 ep8 mbs1 z1 tpov sel" (vpp/cp/ep/etp of 1 left out;
// tpov = TP communication overlap, sel/full = recomputation; "first17 last14": uneven first/last stages).
QString layoutLabel(const ParallelConfig& p);
// "none" | "selective" | "full" | "full(4)".
QString recomputeLabel(const ParallelConfig& p);
QString scheduleLabel(const ParallelConfig& p);

}  // namespace mplan::gui
