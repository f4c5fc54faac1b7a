// Explanations name what moved: memory that does not fit, TP crossing the NVLink domain, bubbles.
#include <gtest/gtest.h>

#include "planner/planner.h"
#include "planner_test_util.h"
#include "simulator/cost_params.h"

namespace mplan {
namespace {

TEST(Explain, PlanAgainstItsAlternatives) {
  Plan p = test::job(model_preset("llama3-70b").value(), test::cluster("dgx-h100"), 64, 128, 8192);
  p.parallel.tp = 8, p.parallel.sp = true, p.parallel.pp = 4, p.parallel.vpp = 5, p.parallel.schedule = Schedule::interleaved;
  auto text = explain_plan(p, shipped_calibration());
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_NE(text->find("the usual alternatives"), std::string::npos) << *text;
  EXPECT_NE(text->find("tp=4:"), std::string::npos) << *text;
  EXPECT_NE(text->find("where the time goes"), std::string::npos);
  // tp=16 crosses the 8-GPU NVLink domain of a DGX: says so (70B has 8 query groups, so tp=16 is
  // invalid there; llama3.1-405b has 128 heads and 8 groups too) -> use a model with 16 groups
  Plan g = test::job(model_preset("gpt3-175b").value(), test::cluster("dgx-h100"), 256, 512, 2048);
  g.parallel.tp = 8, g.parallel.sp = true, g.parallel.pp = 8;
  auto t2 = explain_plan(g, shipped_calibration());
  ASSERT_TRUE(t2.ok()) << t2.error().message();
  EXPECT_NE(t2->find("tp=16"), std::string::npos) << *t2;
  EXPECT_NE(t2->find("crosses the NVLink domain"), std::string::npos) << *t2;
  // a layout near the memory limit: doubling the micro-batch does not fit, with the reason
  Plan m = test::job(model_preset("llama3-8b").value(), test::cluster("dgx-h100"), 8, 64, 8192);
  m.parallel.micro_batch_size = 2;
  auto t3 = explain_plan(m, shipped_calibration());
  ASSERT_TRUE(t3.ok());
  EXPECT_NE(t3->find("does not fit: +"), std::string::npos) << *t3;
  EXPECT_NE(t3->find("activations on stage"), std::string::npos) << *t3;
}

TEST(Explain, SearchWinnerNextToRunnersUp) {
  Plan j = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 16, 64, 4096);
  SearchOptions o;
  o.top_k = 4;
  auto r = search(j, shipped_calibration(), o);
  ASSERT_TRUE(r.ok());
  auto text = explain_search(*r, shipped_calibration());
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("#1"), std::string::npos);
  EXPECT_NE(text->find("#4"), std::string::npos);
  EXPECT_NE(text->find("why the winner won"), std::string::npos);
  SearchResult empty;
  empty.top_rejection_reasons = {"does not fit: 3 layouts"};
  auto t2 = explain_search(empty, shipped_calibration());
  ASSERT_TRUE(t2.ok());
  EXPECT_NE(t2->find("does not fit"), std::string::npos);
}

}  // namespace
}  // namespace mplan
