// `mplan runs, regress`: subcommands over the runs library (owned by that part).
#include "cli/commands.h"

namespace mplan::cli {

void add_runs_commands(CLI::App& /*app*/, Runner& /*run*/) {}

}  // namespace mplan::cli
