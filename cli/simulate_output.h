// Human-readable rendering of a StepReport (used by simulate, explain and verify).
#pragma once
#include <string>

#include "core/plan.h"
#include "simulator/simulator.h"

namespace mplan::cli {

std::string layout_summary(const ParallelConfig& p);
std::string render_report_table(const Plan& plan, const StepReport& r);

}  // namespace mplan::cli
