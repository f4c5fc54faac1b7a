// The `mplan` binary: parses the command line (CLI11) and dispatches to a subcommand.
// Exit codes: 0 ok, 2 usage or bad input (message on stderr), 1 internal error.
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/commands.h"

int main(int argc, char** argv) {
  using namespace mplan::cli;
  CLI::App app{"mplan: plan, simulate and verify parallel layouts for LLM training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("mplan ") + MPLAN_VERSION);
  Runner run;
  add_info_commands(app, run);
  add_inspect_command(app, run);
  add_simulate_commands(app, run);
  add_search_commands(app, run);
  add_search_check_command(app, run);
#ifdef MPLAN_HAVE_PROFILE
  add_profile_commands(app, run);
#endif
#ifdef MPLAN_HAVE_TRAIN
  add_train_commands(app, run);
#endif
#ifdef MPLAN_HAVE_RUNS
  add_runs_commands(app, run);
#endif
  add_gui_command(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "mplan: " << e.what() << "\n(run 'mplan --help' or 'mplan <command> --help' for usage)\n";
    return kExitBadInput;
  }
  try {
    return run ? run() : kExitOk;
  } catch (const InputError& e) {
    std::cerr << "mplan: " << e.message << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "mplan: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
