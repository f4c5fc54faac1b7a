// The one statistics definition (core/stats.h): linear interpolation between closest ranks, the
// median as its 0.5-quantile, and the FNV-1a hash and ISO timestamps of core/.
#include <gtest/gtest.h>

#include "core/hash.h"
#include "core/stats.h"
#include "core/time_format.h"

using namespace mplan;

TEST(Stats, MedianOddEvenEmpty) {
  EXPECT_DOUBLE_EQ(stats::median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(stats::median({4, 1, 3, 2}), 2.5);  // mean of the two middle values
  EXPECT_DOUBLE_EQ(stats::median({}), 0);
  EXPECT_DOUBLE_EQ(stats::median({7}), 7);
}

TEST(Stats, QuantilesInterpolateBetweenClosestRanks) {
  std::vector<double> v = {10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(stats::quantile(v, 0.0), 10);
  EXPECT_DOUBLE_EQ(stats::quantile(v, 1.0), 50);
  EXPECT_DOUBLE_EQ(stats::quantile(v, 0.1), 14);  // pos 0.4 between 10 and 20
  EXPECT_DOUBLE_EQ(stats::quantile(v, 0.9), 46);
  EXPECT_DOUBLE_EQ(stats::quantile({50, 10, 40, 20, 30}, 0.25), 20);  // unsorted input
  stats::Summary s = stats::summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_NEAR(s.p10, 1.4, 1e-12);
  EXPECT_NEAR(s.p90, 4.6, 1e-12);
}

TEST(Stats, MadAndRange) {
  EXPECT_DOUBLE_EQ(stats::mad({1, 2, 3, 4, 100}), 1);  // robust to the outlier
  EXPECT_DOUBLE_EQ(stats::value_range({3, -1, 7}), 8);
  EXPECT_DOUBLE_EQ(stats::value_range({3}), 0);
}

TEST(Hash, Fnv1aKnownValuesAndChaining) {
  // the algorithm: published FNV-1a 64-bit test vectors, from the published offset basis
  const uint64_t published_basis = 14695981039346656037ULL;
  EXPECT_EQ(fnv1a(published_basis, "", 0), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a(published_basis, "a", 1), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a(published_basis, "foobar", 6), 0x85944171f73967e8ULL);
  // mplan's basis (stored keys depend on it: see hash.h) and chaining over buffers
  EXPECT_EQ(fnv1a(""), 1469598103934665603ULL);
  EXPECT_EQ(fnv1a(fnv1a(kFnv1aOffset, "foo", 3), "bar", 3), fnv1a("foobar"));
  EXPECT_EQ(fnv1a_hex(""), "14650fb0739d0383");  // 1469598103934665603 in hex
}

TEST(TimeFormat, IsoUtc) {
  EXPECT_EQ(utc_iso(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(utc_iso(1700000000), "2023-11-14T22:13:20Z");
  EXPECT_EQ(utc_now_iso().size(), 20u);
}
