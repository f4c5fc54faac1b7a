// The one thread pool (core/parallel_for.h): every index once, and a worker's exception reaches the
// caller (instead of std::terminate) after all workers have stopped.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "core/parallel_for.h"

using namespace mplan;

TEST(ParallelFor, EveryIndexOnce) {
  for (int threads : {1, 2, 7}) {
    std::vector<std::atomic<int>> hits(1000);
    parallel_for(hits.size(), threads, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) ++hits[i];
    });
    for (const auto& h : hits) ASSERT_EQ(h.load(), 1) << threads << " threads";
  }
}

TEST(ParallelFor, WorkerExceptionReachesTheCaller) {
  for (int threads : {1, 4}) {
    std::atomic<size_t> done{0};
    EXPECT_THROW(parallel_for(400, threads,
                              [&](size_t b, size_t e) {
                                for (size_t i = b; i < e; ++i) {
                                  if (i == 123) throw std::runtime_error("item 123");
                                  ++done;
                                }
                              }),
                 std::runtime_error);
    EXPECT_LT(done.load(), 400u);
  }
}
