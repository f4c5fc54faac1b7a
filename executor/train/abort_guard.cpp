// Signal and parent-death watcher of a training process (see abort_guard.h).
#include "executor/train/abort_guard.h"

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigset_t/pthread_sigmask/sigtimedwait, not <csignal>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace mplan::exec {

namespace {

sigset_t watched() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGHUP);
  return s;
}

bool gone(pid_t pid) { return pid > 1 && ::kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

AbortGuard::AbortGuard(bool watch_parent) {
  sigset_t s = watched();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  if (watch_parent) parent_ = ::getppid();
  if (const char* l = std::getenv(kLauncherPidEnv)) launcher_ = pid_t(std::atol(l));
  thread_ = std::thread([this] { watch(); });
}

AbortGuard::~AbortGuard() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void AbortGuard::set_recorder(std::function<void(const std::string&)> recorder) {
  std::lock_guard<std::mutex> lock(mu_);
  recorder_ = std::move(recorder);
}

void AbortGuard::watch() {
  sigset_t s = watched();
  const timespec tick{0, 200 * 1000 * 1000};
  while (!stop_) {
    int sig = sigtimedwait(&s, nullptr, &tick);
    std::string reason;
    if (sig > 0) {
      reason = sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT (Ctrl-C)" : "SIGHUP";
    } else if (parent_ > 1 && ::getppid() != parent_) {
      reason = "the process that started it (pid " + std::to_string(parent_) + ") is gone";
      sig = SIGTERM;
    } else if (gone(launcher_)) {
      reason = "the launching mplan (pid " + std::to_string(launcher_) + ") is gone";
      sig = SIGTERM;
    } else {
      continue;
    }
    {
      // held while recording: a main thread clearing the recorder at the end of the job waits for it
      std::lock_guard<std::mutex> lock(mu_);
      if (recorder_) recorder_(reason);
    }
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(128 + sig);
  }
}

}  // namespace mplan::exec
