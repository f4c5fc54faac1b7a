// WorkerPool: core/parallel_for's loop on threads started once. A search runs thousands of short
// parallel loops (every expansion, probe batch and evaluation batch); starting and joining a thread
// for each costs ~25 us, a tenth of the DeepSeek-V3 search's wall time on two cores. The pool's
// helpers wait between loops (a few microseconds spinning, then asleep); run(n, fn) calls
// fn(begin, end) over [0, n) in the same small contiguous ranges as parallel_for (the caller is one
// of the threads), so results written by index do not depend on scheduling. The first exception of
// any thread is rethrown once all have stopped. One loop at a time: run() is not reentrant and not
// meant to be called from two threads at once.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/parallel_for.h"

namespace mplan::planner {

class WorkerPool {
 public:
  // `threads`: the threads of a loop, the caller included (helpers are started when a loop first
  // needs them).
  explicit WorkerPool(int threads)
      : threads_(std::max(1, threads)), spin_(unsigned(threads_) <= std::max(1u, std::thread::hardware_concurrency())) {}
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool();
  int threads() const { return threads_; }

  template <class Fn>
  void run(size_t n, Fn&& fn) {
    if (n == 0) return;
    const size_t t = size_t(std::min<int64_t>(threads_, int64_t(n)));
    if (t == 1) {
      fn(size_t(0), n);
      return;
    }
    using F = std::remove_reference_t<Fn>;
    dispatch(
        n, parallel_chunk(n, t), t - 1, [](void* ctx, size_t b, size_t e) { (*static_cast<F*>(ctx))(b, e); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using Call = void (*)(void*, size_t, size_t);
  void dispatch(size_t n, size_t chunk, size_t helpers, Call call, void* ctx);
  void helper_loop();
  void work();  // takes ranges of the current loop until none is left

  const int threads_;
  const bool spin_;  // threads wait spinning first (not when there are more of them than cores)
  std::vector<std::thread> helpers_;
  std::mutex mu_;
  std::condition_variable wake_, idle_;
  // the current loop (written under mu_ before helpers are woken)
  uint64_t gen_ = 0;                    // loops started
  std::atomic<uint64_t> published_{0};  // gen_, for the helpers' spin
  bool open_ = false;                   // helpers may still join the current loop
  size_t wanted_ = 0;                   // helpers that may join it (t - 1)
  size_t joined_ = 0;                   // helpers that joined it
  std::atomic<size_t> in_loop_{0};      // helpers working on it now (changed under mu_)
  bool stop_ = false;
  size_t n_ = 0, chunk_ = 1;
  Call call_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<size_t> next_{0};
  std::exception_ptr error_;
};

}  // namespace mplan::planner
