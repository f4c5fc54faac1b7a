// fork/exec/wait (see process.h).
#include "core/process.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mplan {

namespace {

// A pipe whose read end the parent drains into a callback; unused when the callback is empty.
struct Capture {
  const std::function<void(std::string_view)>* sink;
  int fd[2] = {-1, -1};
  bool on() const { return static_cast<bool>(*sink); }
  void close_both() {
    for (int& f : fd) {
      if (f >= 0) close(f);
      f = -1;
    }
  }
};

// Hands everything written to the captured pipes to their callbacks until both are closed.
void drain(Capture* caps, size_t n) {
  char buf[4096];
  for (;;) {
    pollfd fds[2];
    Capture* owner[2];
    nfds_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!caps[i].on() || caps[i].fd[0] < 0) continue;
      fds[k] = {caps[i].fd[0], POLLIN, 0};
      owner[k++] = &caps[i];
    }
    if (k == 0) return;
    if (poll(fds, k, -1) < 0) {
      if (errno == EINTR) continue;
      for (nfds_t i = 0; i < k; ++i) owner[i]->close_both();
      return;
    }
    for (nfds_t i = 0; i < k; ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0)
        (*owner[i]->sink)(std::string_view(buf, size_t(got)));
      else if (got == 0 || errno != EINTR)
        owner[i]->close_both();
    }
  }
}

}  // namespace

int run_process(const std::vector<std::string>& argv_in, const ProcessOptions& opt) {
  if (argv_in.empty()) return -1;
  std::vector<char*> argv;
  argv.reserve(argv_in.size() + 1);
  for (const std::string& s : argv_in) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  // the child's environment is built before fork: nothing that allocates runs between fork and exec
  std::vector<std::string> env_text;
  std::vector<char*> envp;
  if (!opt.env.empty()) {
    for (char** e = environ; *e; ++e) {
      const std::string_view kv(*e);
      const bool replaced = std::any_of(opt.env.begin(), opt.env.end(), [&](const auto& v) {
        return kv.size() > v.first.size() && kv.compare(0, v.first.size(), v.first) == 0 && kv[v.first.size()] == '=';
      });
      if (!replaced) env_text.emplace_back(kv);
    }
    for (const auto& [name, value] : opt.env) env_text.push_back(name + "=" + value);
    for (std::string& s : env_text) envp.push_back(s.data());
    envp.push_back(nullptr);
  }
  Capture caps[2] = {{&opt.on_stdout}, {&opt.on_stderr}};  // stdout, stderr
  for (Capture& c : caps)
    if (c.on() && pipe(c.fd) != 0) {
      for (Capture& d : caps) d.close_both();
      return -1;
    }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    for (Capture& c : caps) c.close_both();
    return -1;
  }
  if (pid == 0) {
    if (opt.die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(128 + SIGTERM);  // the parent died before prctl took effect
    }
    if (opt.stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
    const int target[2] = {STDOUT_FILENO, STDERR_FILENO};
    for (int i = 0; i < 2; ++i)
      if (caps[i].on()) {
        dup2(caps[i].fd[1], target[i]);
        caps[i].close_both();
      }
    if (envp.empty())
      execvp(argv[0], argv.data());
    else
      execvpe(argv[0], argv.data(), envp.data());
    std::fprintf(stderr, "mplan: cannot run %s (%s)%s\n", argv[0], std::strerror(errno), opt.exec_hint.c_str());
    _exit(127);
  }
  for (Capture& c : caps) {
    if (!c.on()) continue;
    close(c.fd[1]);
    c.fd[1] = -1;
  }
  drain(caps, 2);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::optional<std::string> process_output(const std::vector<std::string>& argv) {
  std::string out;
  ProcessOptions o;
  o.on_stdout = [&out](std::string_view s) { out += s; };
  o.on_stderr = [](std::string_view) {};
  if (run_process(argv, o) != 0) return std::nullopt;
  return out;
}

}  // namespace mplan
