// The one process launcher of mplan (mpirun for the CPU profile's collectives and for training, git
// for a run's provenance): fork + execvp of a command line, then wait for it.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mplan {

struct ProcessOptions {
  // The child's standard output goes to this process's standard error (keeps stdout clean for JSON).
  bool stdout_to_stderr = false;
  // The child gets SIGTERM when this process dies, even by SIGKILL (Linux PR_SET_PDEATHSIG).
  bool die_with_parent = false;
  // When set, the child's standard error is read through a pipe and handed over chunk by chunk
  // (the caller may echo and scan it); otherwise it is inherited.
  std::function<void(std::string_view)> on_stderr;
  // The same for standard output (both may be set: the two pipes are read as data arrives).
  std::function<void(std::string_view)> on_stdout;
  // Appended to "mplan: cannot run <program> (<reason>)" when exec fails, e.g. "; install openmpi-bin".
  std::string exec_hint;
  // Variables set in the child's environment (replacing any of the same name); the rest is inherited.
  std::vector<std::pair<std::string, std::string>> env;
};

// Runs argv (argv[0] looked up in PATH) and waits for it. Returns its exit code, 128 + the signal
// when it was killed, 127 when the program could not be started, -1 when fork or pipe failed.
int run_process(const std::vector<std::string>& argv, const ProcessOptions& opt = {});

// Runs argv and returns what it wrote to standard output when it exits 0 (its standard error is
// read and dropped); nullopt when it could not start, failed or was killed. For short queries such as
// `git rev-parse HEAD`.
std::optional<std::string> process_output(const std::vector<std::string>& argv);

}  // namespace mplan
