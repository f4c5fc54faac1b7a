// planner/worker_pool.h: the search's persistent threads run each loop like parallel_for (every index
// once, in the same ranges), over and over on the same helpers, and a helper's exception reaches the
// caller after every thread has stopped (the pool stays usable).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "core/parallel_for.h"
#include "planner/worker_pool.h"

using mplan::planner::WorkerPool;

TEST(WorkerPool, EveryIndexOnceInManyLoops) {
  for (int threads : {1, 2, 7}) {
    WorkerPool pool(threads);
    for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(16), size_t(1000), size_t(5), size_t(2)}) {
      for (int rep = 0; rep < 50; ++rep) {
        std::vector<std::atomic<int>> hits(n);
        pool.run(n, [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) ++hits[i];
        });
        for (const auto& h : hits) ASSERT_EQ(h.load(), 1) << threads << " threads, n " << n;
      }
    }
  }
}

TEST(WorkerPool, SameRangesAsParallelFor) {
  for (int threads : {2, 3}) {
    WorkerPool pool(threads);
    for (size_t n : {size_t(2), size_t(16), size_t(33), size_t(1000)}) {
      std::mutex mu;
      std::set<std::pair<size_t, size_t>> a, b;
      pool.run(n, [&](size_t x, size_t y) {
        std::lock_guard<std::mutex> lock(mu);
        a.emplace(x, y);
      });
      mplan::parallel_for(n, threads, [&](size_t x, size_t y) {
        std::lock_guard<std::mutex> lock(mu);
        b.emplace(x, y);
      });
      EXPECT_EQ(a, b) << threads << " threads, n " << n;
    }
  }
}

TEST(WorkerPool, UsesItsHelpers) {
  WorkerPool pool(2);
  std::mutex mu;
  std::set<std::thread::id> ids;
  for (int rep = 0; rep < 200 && ids.size() < 2; ++rep)
    pool.run(64, [&](size_t, size_t) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    });
  EXPECT_EQ(ids.size(), 2u);  // the caller and its one helper
}

TEST(WorkerPool, ExceptionReachesTheCallerAndThePoolGoesOn) {
  for (int threads : {1, 4}) {
    WorkerPool pool(threads);
    std::atomic<size_t> done{0};
    EXPECT_THROW(pool.run(400,
                          [&](size_t b, size_t e) {
                            for (size_t i = b; i < e; ++i) {
                              if (i == 123) throw std::runtime_error("item 123");
                              ++done;
                            }
                          }),
                 std::runtime_error);
    EXPECT_LT(done.load(), 400u);
    std::atomic<size_t> sum{0};
    pool.run(100, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) sum += i;
    });
    EXPECT_EQ(sum.load(), 4950u);
  }
}
