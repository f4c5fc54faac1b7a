// Every stage's action list of one schedule shape at once (core/schedule.h gives one stage's): the
// simulator's schedule tables are built from it. The same lists as schedule_actions() per stage;
// ZB-H1's lock-step generation, which makes all stages' lists together, runs once instead of once
// per stage.
#pragma once
#include <vector>

#include "core/schedule.h"

namespace mplan {

// [stage] -> schedule_actions(s, pp, vpp, microbatches, stage).
std::vector<std::vector<Action>> schedule_all_stages(Schedule s, int pp, int vpp, int microbatches);

}  // namespace mplan
