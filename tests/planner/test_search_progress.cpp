// What the GUI sees of a running search: cancellation takes effect during the enumeration (not only
// once it is over), and progress rises in steps instead of sitting at 0 and jumping to the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "planner/planner.h"
#include "planner_test_util.h"

namespace mplan {
namespace {

Plan big_job() {  // a large space: Llama-3-70B on 1,024 H100
  return test::job(model_preset("llama3-70b").value(), test::cluster("dgx-h100"), 1024, 1024, 8192);
}

TEST(SearchProgress, CancelBeforeTheStartEnumeratesNothing) {
  std::atomic<bool> stop{true};
  SearchOptions o;
  o.cancel = &stop;
  auto r = search(big_job(), shipped_calibration(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cancelled);
  EXPECT_EQ(r->stats.enumerated, 0);  // the enumeration itself looks at the flag
  EXPECT_EQ(r->stats.simulated, 0);
  EXPECT_TRUE(r->top.empty());
}

TEST(SearchProgress, CancelDuringTheEnumerationStopsIt) {
  // the first progress report comes before the enumeration; cancelling there must stop the search
  // before any layout is simulated
  std::atomic<bool> stop{false};
  std::vector<double> seen;
  SearchOptions o;
  o.cancel = &stop;
  o.threads = 1;
  o.progress = [&](double f) {
    seen.push_back(f);
    stop = true;
  };
  auto r = search(big_job(), shipped_calibration(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cancelled);
  EXPECT_EQ(r->stats.simulated, 0);
  EXPECT_EQ(r->stats.enumerated, 0);
  ASSERT_FALSE(seen.empty());
  EXPECT_LT(*std::max_element(seen.begin(), seen.end()), 0.2);
}

TEST(SearchProgress, RisesInStepsToTheEnd) {
  std::vector<double> seen;
  SearchOptions o;
  o.threads = 1;  // progress is reported from the search's own thread; one worker keeps it simple
  o.progress = [&](double f) { seen.push_back(f); };
  auto r = search(big_job(), shipped_calibration(), o);
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->top.empty());
  ASSERT_GE(seen.size(), 5u);
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
  // what the GUI shows is the running maximum: several steps inside (0, 1), none larger than half
  double shown = 0, biggest_jump = 0;
  int inside = 0;
  for (double f : seen) {
    EXPECT_GE(f, 0.0);
    EXPECT_LE(f, 1.0);
    if (f > shown) {
      biggest_jump = std::max(biggest_jump, f - shown);
      shown = f;
      if (f > 0 && f < 1) ++inside;
    }
  }
  EXPECT_GE(inside, 4);
  EXPECT_LT(biggest_jump, 0.5) << "progress jumps";
}

}  // namespace
}  // namespace mplan
