// Registration of the `mplan` subcommands. Each cmd_*.cpp adds one (or a few related) subcommands to
// the CLI11 app and sets `run` to the function executed when it is chosen.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "core/limits.h"

namespace mplan::cli {

// Exit codes of every subcommand.
constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;

// A user-input error: printed to stderr as "mplan: <message>", exit 2.
struct InputError {
  std::string message;
};

using Runner = std::function<int()>;

void add_info_commands(CLI::App& app, Runner& run);    // version, models, clusters
void add_inspect_command(CLI::App& app, Runner& run);  // inspect
// Each part's subcommands live in their own cmd_*.cpp (owned by that part):
void add_simulate_commands(CLI::App& app, Runner& run);     // simulate, validate, bench     (cmd_simulate.cpp)
void add_search_commands(CLI::App& app, Runner& run);       // search, explain, export       (cmd_search.cpp)
void add_search_check_command(CLI::App& app, Runner& run);  // search-check             (cmd_search_check.cpp)
void add_profile_commands(CLI::App& app, Runner& run);      // profile, calibrate            (cmd_profile.cpp)
void add_train_commands(CLI::App& app, Runner& run);        // train, verify                 (cmd_train.cpp)
void add_runs_commands(CLI::App& app, Runner& run);         // runs, regress                 (cmd_runs.cpp)
void add_gui_command(CLI::App& app, Runner& run);           // gui -> mplan-gui               (cmd_gui.cpp)

// --format table|json validator shared by subcommands.
CLI::Validator format_choice(std::initializer_list<const char*> choices);
// Numeric options with physical bounds (cli/validators.cpp): an integer in [lo, hi]; a finite real in
// [lo, hi] (or (lo, hi] when lo_open). The message states the range in a few characters.
CLI::Validator int_range(int64_t lo, int64_t hi);
CLI::Validator real_range(double lo, double hi, bool lo_open = false);

}  // namespace mplan::cli
