// Resolving --model/--cluster/--plan arguments for subcommands; failures become InputError (exit 2).
#pragma once
#include <string>

#include "cli/commands.h"
#include "core/plan.h"
#include "core/presets.h"

namespace mplan::cli {

ModelSpec require_model(const std::string& name_or_file);
ClusterSpec require_cluster(const std::string& name_or_file);
Plan require_plan(const std::string& path);

}  // namespace mplan::cli
