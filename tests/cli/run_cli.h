// Runs the built `mplan` binary in a shell for CLI tests: exit code, stdout and stderr.
#pragma once
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "../file_bytes.h"

struct CliResult {
  int code = -1;
  std::string out, err;
};

// `name` in this test process's own folder TempDir()/<prefix>_<pid>, made on first use.
inline std::string temp_path(const std::string& prefix, const std::string& name) {
  const std::string d = ::testing::TempDir() + "/" + prefix + "_" + std::to_string(::getpid());
  ::mkdir(d.c_str(), 0755);
  return d + "/" + name;
}

inline std::string slurp(const std::string& path) { return mplan::test::file_bytes(path); }

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
