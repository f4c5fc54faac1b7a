// `mplan search` with several GPU counts and the time to train (issue 32): the scaling curve in the
// table and in JSON, distinct answers (folded counts, --expand, every row of a group in JSON), and every
// bad input refused with exit 2 naming the field and what would be valid.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_cli.h"

namespace {

const std::string kJob = "--model llama3-8b --cluster dgx-h100 --gbs 256 --seq 4096 --top 2 ";

TEST(CliSearchScaling, CurveWithTimeToTrain) {
  auto r = run_mplan("search " + kJob + "--gpus 16..64 --train-tokens 1T --gpu-hour-price 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("scaling: the best layout of each GPU count, 1.00 T tokens"), std::string::npos) << r.out;
  for (const char* col : {"expected days", "goodput", "checkpoint every", "GPU-hours", "cost"})
    EXPECT_NE(r.out.find(col), std::string::npos) << col;
  auto j = run_mplan("search " + kJob + "--gpus 16,64 --train-tokens 1T --format json");
  ASSERT_EQ(j.code, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["scaling"].size(), 2u);
  EXPECT_EQ(doc["scaling"][1]["gpus"], 64);
  const auto& t = doc["scaling"][1]["time_to_train"];
  EXPECT_GT(t["expected_days"].get<double>(), t["ideal_days"].get<double>());
  EXPECT_LT(t["goodput"].get<double>(), 1.0);
  EXPECT_EQ(doc["searches"][0]["gpus"], 16);
  EXPECT_FALSE(doc["searches"][0]["results"].empty());
}

TEST(CliSearchScaling, GroupsInTableAndJson) {
  auto r = run_mplan("search " + kJob + "--gpus 64 --fix tp=2,pp=2 --expand");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("folded"), std::string::npos);
  EXPECT_NE(r.out.find("\n1.2 "), std::string::npos) << r.out;  // a member of group 1, listed by --expand
  auto j = run_mplan("search " + kJob + "--gpus 64 --fix tp=2,pp=2 --format json");
  ASSERT_EQ(j.code, 0) << j.err;
  auto rows = nlohmann::json::parse(j.out);
  ASSERT_GT(rows.size(), 2u);  // the two groups' bests and their members
  EXPECT_EQ(rows[0]["rank"], 1);
  EXPECT_EQ(rows[0]["group_member"], 1);
  EXPECT_EQ(rows[1]["rank"], 1);
  EXPECT_EQ(rows[1]["group_member"], 2);
  EXPECT_EQ(rows.back()["rank"], 2);
}

TEST(CliSearchScaling, BadInputExits2NamingTheField) {
  struct Bad {
    std::string args, needle;
  };
  for (const Bad& b :
       {Bad{"--gpus ..", "--gpus"}, Bad{"--gpus 256..", "needs both ends"}, Bad{"--gpus 1024..256", "inverted"},
        Bad{"--gpus 100..400", "powers of two"}, Bad{"--gpus 64,abc", "not a positive integer"},
        Bad{"--gpus 64,65536", "65536: the cluster holds at most"}, Bad{"--gpus 64 --train-tokens lots", "--train-tokens"},
        Bad{"--gpus 64 --train-tokens -3T", "--train-tokens"},
        Bad{"--gpus 64 --train-tokens 1T --gpu-hour-price cheap", "--gpu-hour-price"},
        Bad{"--gpus 64 --train-tokens 1T --failure-rate often", "--failure-rate"},
        Bad{"--gpus 64 --train-tokens 1T --ckpt-write-gbps fast", "--ckpt-write-gbps"},
        Bad{"--gpus 64 --train-tokens 1T --ckpt-write-gbps 0", "--ckpt-write-gbps"},
        Bad{"--gpus 64 --gpu-hour-price 2", "give --train-tokens"}}) {
    auto r = run_mplan("search " + kJob + b.args);
    EXPECT_EQ(r.code, 2) << b.args << "\n" << r.out << r.err;
    EXPECT_NE((r.err + r.out).find(b.needle), std::string::npos) << b.args << ": " << r.err;
  }
  // every other command keeps one integer
  auto s = run_mplan("simulate --model llama3-8b --cluster dgx-h100 --gpus 8,16 --gbs 256 --seq 4096");
  EXPECT_EQ(s.code, 2) << s.out;
}

}  // namespace
