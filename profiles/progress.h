// Progress bar on stderr for long profiling runs (redrawn in place on a terminal, a line per 10%
// otherwise), and the Ctrl-C flag: SIGINT/SIGTERM ask the profiler to stop after the current batch.
#pragma once
#include <chrono>
#include <string>

namespace mplan::profiles {

class Progress {
 public:
  Progress(std::string title, int total, bool enabled = true);
  void step(const std::string& what, int n = 1);  // n more units done, now working on `what`
  void finish(const std::string& summary);

 private:
  void draw(const std::string& what);
  std::string title_;
  int total_ = 0, done_ = 0, last_decile_ = -1;
  bool enabled_ = true, tty_ = false;
  std::chrono::steady_clock::time_point start_;
};

// Installs SIGINT/SIGTERM handlers that set the stop flag (the signal handler's only state).
void install_stop_handlers();
bool stop_requested();
void request_stop();  // also for tests

}  // namespace mplan::profiles
