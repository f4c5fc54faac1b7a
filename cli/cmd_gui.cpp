// `mplan gui [ARGS...]`: starts the desktop app (mplan-gui, next to this binary) with ARGS.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace mplan::cli {

void add_gui_command(CLI::App& app, Runner& run) {
  auto* g = app.add_subcommand("gui", "Open the desktop app (mplan-gui); further arguments go to mplan-gui");
  g->prefix_command();
  g->callback([&run, g] {
    run = [g]() -> int {
      std::error_code ec;
      auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
      std::filesystem::path bin = ec ? std::filesystem::path("mplan-gui") : self.parent_path() / "mplan-gui";
      std::vector<std::string> args = g->remaining();
      std::string b = bin.string();
      std::vector<char*> argv{b.data()};
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(b.c_str(), argv.data());  // returns only on failure
      throw InputError{"cannot start " + b + ": " + std::strerror(errno) +
                       " (mplan-gui is built only when Qt6 Widgets+Charts are found: MPLAN_BUILD_GUI)"};
    };
  });
}

}  // namespace mplan::cli
