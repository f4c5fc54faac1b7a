// Resolving --model/--cluster/--plan arguments for subcommands; failures become InputError (exit 2).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/plan.h"
#include "core/presets.h"

namespace mplan::cli {

ModelSpec require_model(const std::string& name_or_file);
ClusterSpec require_cluster(const std::string& name_or_file);
Plan require_plan(const std::string& path);

// A plan file fixes the model, cluster, batch, framework and layout: when `sub`'s --plan was given,
// every other option given on the command line is refused (InputError, exit 2, naming each flag and
// how to change the plan instead), except those in `keep` (the run's own settings and the overrides
// such as --calibration and --force). Call it from the subcommand's runner, before the plan is used.
void refuse_flags_beside_plan(const CLI::App& sub, const std::vector<std::string>& keep);

}  // namespace mplan::cli
