// `mplan profile, calibrate`: subcommands over the profiles library (owned by that part).
#include "cli/commands.h"

namespace mplan::cli {

void add_profile_commands(CLI::App& /*app*/, Runner& /*run*/) {}

}  // namespace mplan::cli
