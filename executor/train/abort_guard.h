// A training process ends with whoever started it, and says so in the runs database. AbortGuard
// blocks SIGTERM, SIGINT and SIGHUP in every thread and runs one watcher thread that wakes on them,
// and also notices when its parent (mpirun, or the launching `mplan train`/`mplan verify`) or the
// launcher named by MPLAN_LAUNCHER_PID has gone (killed with SIGKILL, say). Then it runs the
// recorder set by the training loop (rank 0 stores the run with status "aborted" and the steps done),
// and ends the process with 128 + signal, even when the main thread is blocked in a collective.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace mplan::exec {

// Environment variable naming the launcher's pid (set by run_launcher for every rank).
constexpr const char* kLauncherPidEnv = "MPLAN_LAUNCHER_PID";

class AbortGuard {
 public:
  // Construct before MPI_Init and before any other thread starts, so every thread inherits the mask.
  // `watch_parent`: also end when the parent process goes away (a rank under mpirun, or a process
  // started by an mplan launcher; not a run started from a shell, which may be nohup'ed).
  explicit AbortGuard(bool watch_parent);
  ~AbortGuard();  // stops the watcher (normal end of the job)
  AbortGuard(const AbortGuard&) = delete;
  AbortGuard& operator=(const AbortGuard&) = delete;

  // Called at most once, from the watcher thread, with why the job ends ("SIGTERM", "the launching
  // process 1234 is gone"); must not wait for the main thread.
  void set_recorder(std::function<void(const std::string& reason)> recorder);

 private:
  void watch();

  std::atomic<bool> stop_{false};
  pid_t parent_ = 0, launcher_ = 0;
  std::mutex mu_;
  std::function<void(const std::string&)> recorder_;
  std::thread thread_;
};

}  // namespace mplan::exec
