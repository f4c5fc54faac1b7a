// `mplan train, verify`: subcommands over the executor library (owned by that part).
#include "cli/commands.h"

namespace mplan::cli {

void add_train_commands(CLI::App& /*app*/, Runner& /*run*/) {}

}  // namespace mplan::cli
