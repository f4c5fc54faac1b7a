// WorkerPool (see worker_pool.h): helpers that wait for the next loop spinning a few microseconds,
// then asleep.
#include "planner/worker_pool.h"

#include <chrono>

namespace mplan::planner {

namespace {

// How long a helper (for the next loop) or the caller (for the helpers to finish) spins before it
// sleeps: a search's loops follow each other within microseconds, and a sleeping thread takes tens of
// them to wake (while the caller already works alone).
constexpr std::chrono::microseconds kSpin{30};

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until `done()` or kSpin has passed.
template <class Done>
void spin(Done&& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int k = 0; !done(); ++k) {
    relax();
    if ((k & 63) == 63 && std::chrono::steady_clock::now() >= until) return;
  }
}

}  // namespace

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& h : helpers_) h.join();
}

void WorkerPool::work() {
  try {
    for (size_t b; (b = next_.fetch_add(chunk_)) < n_;) call_(ctx_, b, std::min(n_, b + chunk_));
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = std::current_exception();
    next_ = n_;  // stop handing out work
  }
}

void WorkerPool::helper_loop() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (spin_ && !stop_ && gen_ == seen) {
      lock.unlock();
      spin([&] { return published_.load(std::memory_order_acquire) != seen; });
      lock.lock();
    }
    wake_.wait(lock, [&] { return stop_ || gen_ != seen; });
    if (stop_) return;
    seen = gen_;
    // a helper that wakes after the caller closed the loop, or beyond the loop's thread count, skips it
    if (!open_ || joined_ >= wanted_) continue;
    ++joined_;
    in_loop_.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    work();
    lock.lock();
    if (in_loop_.fetch_sub(1, std::memory_order_release) == 1) idle_.notify_all();
  }
}

void WorkerPool::dispatch(size_t n, size_t chunk, size_t helpers, Call call, void* ctx) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (helpers_.size() < helpers) helpers_.emplace_back([this] { helper_loop(); });  // as many as loops need
    n_ = n;
    chunk_ = chunk;
    call_ = call;
    ctx_ = ctx;
    next_ = 0;
    error_ = nullptr;
    wanted_ = helpers;
    joined_ = 0;
    open_ = true;
    ++gen_;
    published_.store(gen_, std::memory_order_release);
  }
  wake_.notify_all();
  work();
  std::exception_ptr error;
  {
    // no helper joins from now on (the ranges are all taken); wait for those that did
    std::unique_lock<std::mutex> lock(mu_);
    open_ = false;
    if (spin_ && in_loop_.load(std::memory_order_relaxed) > 0) {
      lock.unlock();
      spin([&] { return in_loop_.load(std::memory_order_acquire) == 0; });
      lock.lock();
    }
    idle_.wait(lock, [&] { return in_loop_.load(std::memory_order_relaxed) == 0; });
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace mplan::planner
