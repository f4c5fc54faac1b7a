// `mplan simulate, validate, bench`: subcommands over the simulator library (owned by that part).
#include "cli/commands.h"

namespace mplan::cli {

void add_simulate_commands(CLI::App& /*app*/, Runner& /*run*/) {}

}  // namespace mplan::cli
