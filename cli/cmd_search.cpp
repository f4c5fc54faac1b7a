// `mplan search, explain, export`: subcommands over the planner library (owned by that part).
#include "cli/commands.h"

namespace mplan::cli {

void add_search_commands(CLI::App& /*app*/, Runner& /*run*/) {}

}  // namespace mplan::cli
