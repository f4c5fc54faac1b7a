// placeholder
#include "planner/planner.h"
namespace mplan {
std::string export_megatron_args(const Plan&) { return ""; }
Expected<MegatronLayout> parse_megatron_args(const std::string&) { return Error("todo"); }
}
