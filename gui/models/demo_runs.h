// A synthetic runs database for demonstrations and tests of the runs view: a few Llama-3-8B layouts
// on 64 H100, a run per week each, MFU around the simulator's prediction with noise, one plan with a
// recovered regression and one whose latest run regressed; per-op timings around the predicted ones.
// Every run is tagged "synthetic" and its host is "demo" — it is not a measurement.
#pragma once
#include <string>

#include "core/status.h"

namespace mplan::gui {

// Creates (or appends to) the database at `path`. Deterministic.
Status writeDemoRuns(const std::string& path);

}  // namespace mplan::gui
