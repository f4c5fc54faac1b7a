// Human-readable rendering of a StepReport (used by simulate, explain and verify).
#pragma once
#include <optional>
#include <string>

#include "core/plan.h"
#include "simulator/memory_options.h"
#include "simulator/simulator.h"

namespace mplan::cli {

std::string layout_summary(const ParallelConfig& p);
// `fits_with`: given for a layout that does not fit, the row "fits with" names the memory option that
// makes it fit at the least step time (or says that none does).
std::string render_report_table(const Plan& plan, const StepReport& r, const std::optional<FitsWith>* fits_with = nullptr);
// {option, step_time_s, peak_memory_gib} of `mplan simulate --format json`, or null when no option fits.
nlohmann::json fits_with_json(const std::optional<FitsWith>& f);

}  // namespace mplan::cli
