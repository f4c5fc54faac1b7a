// Runs the built `mplan` binary in a shell for CLI tests: exit code, stdout and stderr.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

struct CliResult {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a shell command line with stdout and stderr captured.
inline CliResult run_shell(const std::string& cmdline) {
  static int counter = 0;
  std::string base = ::testing::TempDir() + "/cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  std::string cmd = cmdline + " >" + base + ".out 2>" + base + ".err";
  int st = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

inline CliResult run_mplan(const std::string& args) { return run_shell(std::string(MPLAN_BINARY_DIR) + "/bin/mplan " + args); }
