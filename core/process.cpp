// fork/exec/wait (see process.h).
#include "core/process.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mplan {

int run_process(const std::vector<std::string>& argv_in, const ProcessOptions& opt) {
  if (argv_in.empty()) return -1;
  std::vector<char*> argv;
  argv.reserve(argv_in.size() + 1);
  for (const std::string& s : argv_in) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  const bool capture = static_cast<bool>(opt.on_stderr);
  int err_pipe[2] = {-1, -1};
  if (capture && pipe(err_pipe) != 0) return -1;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    if (capture) {
      close(err_pipe[0]);
      close(err_pipe[1]);
    }
    return -1;
  }
  if (pid == 0) {
    if (opt.die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(128 + SIGTERM);  // the parent died before prctl took effect
    }
    if (opt.stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
    if (capture) {
      dup2(err_pipe[1], STDERR_FILENO);
      close(err_pipe[0]);
      close(err_pipe[1]);
    }
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "mplan: cannot run %s (%s)%s\n", argv[0], std::strerror(errno), opt.exec_hint.c_str());
    _exit(127);
  }
  if (capture) {
    close(err_pipe[1]);
    char buf[4096];
    for (;;) {
      ssize_t n = read(err_pipe[0], buf, sizeof buf);
      if (n > 0) {
        opt.on_stderr(std::string_view(buf, size_t(n)));
      } else if (n == 0 || errno != EINTR) {
        break;
      }
    }
    close(err_pipe[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace mplan
