// parallel_for(n, threads, fn): runs fn(begin, end) over [0, n) in small contiguous ranges taken by
// `threads` threads (the caller is one of them). Results must be written by index, so their order does
// not depend on scheduling.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace mplan {

// The range size a loop of n items over t threads hands out: small (about four per thread) and
// interleaved, so that uneven work (some items simulate, some do not) balances. planner/worker_pool.h
// hands out the same ranges.
inline size_t parallel_chunk(size_t n, size_t t) { return std::max<size_t>(1, n / (t * 4)); }

template <class Fn>
void parallel_for(size_t n, int threads, Fn&& fn) {
  if (n == 0) return;
  size_t t = size_t(std::max(1, std::min<int>(threads, int(n))));
  if (t == 1) {
    fn(size_t(0), n);
    return;
  }
  // the first exception of any thread is rethrown here once all have stopped
  std::vector<std::thread> pool;
  size_t chunk = parallel_chunk(n, t);
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&] {
    try {
      for (size_t b; (b = next.fetch_add(chunk)) < n;) fn(b, std::min(n, b + chunk));
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
      next = n;  // stop handing out work
    }
  };
  for (size_t k = 1; k < t; ++k) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace mplan
