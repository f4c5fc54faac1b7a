// placeholder
#include "planner/planner.h"
namespace mplan {
Expected<std::string> export_torchtitan_toml(const Plan&) { return Error("todo"); }
}
