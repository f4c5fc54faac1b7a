// Progress bar and stop flag (see progress.h).
#include "profiles/progress.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>

namespace mplan::profiles {

namespace {
// The one piece of global state: written by the signal handler, read between batches.
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }
}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}
bool stop_requested() { return g_stop != 0; }
void request_stop() { g_stop = 1; }

Progress::Progress(std::string title, int total, bool enabled)
    : title_(std::move(title)),
      total_(total),
      enabled_(enabled),
      tty_(isatty(2) != 0),
      start_(std::chrono::steady_clock::now()) {}

void Progress::step(const std::string& what, int n) {
  done_ += n;
  draw(what);
}

void Progress::draw(const std::string& what) {
  if (!enabled_ || total_ <= 0) return;
  double frac = std::min(1.0, double(done_) / total_);
  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (tty_) {
    const int width = 30;
    int fill = int(frac * width);
    std::string bar(size_t(fill), '#');
    bar.append(size_t(width - fill), '.');
    std::string eta = done_ > 0 && frac < 1 ? " eta " + std::to_string(int(el / frac - el)) + "s" : "";
    std::fprintf(stderr, "\r\033[K%s [%s] %3d%% %s%s", title_.c_str(), bar.c_str(), int(frac * 100), what.c_str(), eta.c_str());
    std::fflush(stderr);
  } else {
    int decile = int(frac * 10);
    if (decile != last_decile_) {
      last_decile_ = decile;
      std::fprintf(stderr, "%s: %3d%% (%.0f s) %s\n", title_.c_str(), decile * 10, el, what.c_str());
    }
  }
}

void Progress::finish(const std::string& summary) {
  if (!enabled_) return;
  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (tty_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s: %s (%.1f s)\n", title_.c_str(), summary.c_str(), el);
}

}  // namespace mplan::profiles
