// placeholder
#include "planner/planner.h"
namespace mplan {
Expected<std::string> explain_plan(const Plan&, const Calibration&) { return Error("todo"); }
Expected<std::string> explain_search(const SearchResult&, const Calibration&) { return Error("todo"); }
}
