// Regression plots: tick placement, SVG content per plan, file writing (SVG always, PNG when built).
#include <gtest/gtest.h>

#include <filesystem>

#include "runs/plot.h"
#include "runs_test_util.h"
#ifdef MPLAN_RUNS_HAVE_PNG
#include "runs/plot_png.h"
#endif

using namespace mplan::runs;

namespace {

RegressReport report() {
  RegressReport rep;
  rep.baseline = "last-5";
  rep.threshold_pct = 5;
  for (int k = 0; k < 2; ++k) {
    PlanRegression p;
    p.plan_key = "plan-" + std::to_string(k);
    p.label = k ? "llama3-8b <H100> x8" : "mixtral & co";
    p.status = k ? "regression" : "ok";
    p.baseline_mfu = 0.40;
    p.noise_mfu = 0.01;
    p.change_pct = k ? -12 : 1;
    p.baseline_ids = {1, 2, 3};
    for (int i = 0; i < 6; ++i)
      p.history.push_back(
          {i + 1, "2024-05-0" + std::to_string(i + 1) + "T00:00:00Z", i == 5 && k ? 0.35 : 0.40, i >= 3 ? 0.43 : 0.0});
    rep.plans.push_back(p);
  }
  return rep;
}

int count(const std::string& s, const std::string& needle) {
  int n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(Plot, NiceTicksCoverTheRange) {
  auto t = nice_ticks(31.2, 44.9, 5);
  ASSERT_GE(t.size(), 3u);
  EXPECT_LE(t.front(), 31.2);
  EXPECT_GE(t.back(), 44.9);
  EXPECT_DOUBLE_EQ(t[1] - t[0], 5.0);
  auto flat = nice_ticks(40, 40, 5);
  EXPECT_GE(flat.size(), 2u);
  AxisMap y{0, 10, 100, 0};
  EXPECT_DOUBLE_EQ(y(0), 100);
  EXPECT_DOUBLE_EQ(y(5), 50);
}

TEST(Plot, SvgHasOnePanelPerPlanWithBaselinePredictionAndEscapedText) {
  PlotScene s = regress_plot(report());
  EXPECT_GT(s.height, 2 * 200.0);
  std::string svg = scene_to_svg(s);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(count(svg, "stroke=\"#1f77b4\" stroke-width=\"2.00\" points="), 2);  // measured line per plan
  EXPECT_GE(count(svg, "stroke=\"#ff7f0e\""), 2);                                // prediction
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);                    // dashed baseline
  EXPECT_NE(svg.find("mixtral &amp; co"), std::string::npos);
  EXPECT_NE(svg.find("&lt;H100&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">REGRESSION"), std::string::npos);
  EXPECT_NE(svg.find("fill=\"#d62728\""), std::string::npos);  // latest point of the regressed plan
}

TEST(Plot, WritesSvgAndRefusesUnknownTypes) {
  std::string dir = runs_test::temp_dir();
  PlotScene s = regress_plot(report());
  ASSERT_TRUE(write_plot(s, dir + "/mfu.svg", nullptr).ok());
  EXPECT_EQ(runs_test::read_bytes(dir + "/mfu.svg"), scene_to_svg(s));
  auto jpg = write_plot(s, dir + "/mfu.jpg", nullptr);
  ASSERT_FALSE(jpg.ok());
  EXPECT_NE(jpg.error().message().find(".svg or .png"), std::string::npos);
  auto png = write_plot(s, dir + "/mfu.png", nullptr);
  ASSERT_FALSE(png.ok());
  EXPECT_NE(png.error().message().find("not built"), std::string::npos);
  EXPECT_FALSE(write_plot(s, dir + "/no/such/dir/mfu.svg", nullptr).ok());
}

#ifdef MPLAN_RUNS_HAVE_PNG
TEST(Plot, WritesPng) {
  std::string dir = runs_test::temp_dir();
  ASSERT_TRUE(write_plot(regress_plot(report()), dir + "/mfu.png", &write_png).ok());
  std::string bytes = runs_test::read_bytes(dir + "/mfu.png");
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  EXPECT_FALSE(std::filesystem::exists(dir + "/mfu.png.tmp"));
}
#endif
