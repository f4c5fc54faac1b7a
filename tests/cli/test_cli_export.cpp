// `mplan export` and `mplan import` as a user runs them (issue 16): a searched plan exported as Megatron-LM
// arguments reads back into the same plan; torchtitan's current Python configuration and the v0.2 TOML; bad argument files and
// missing GPU counts are exit 2 naming the flag; the executor refuses model features it does not train (exit 2 naming the field);
// search ranks only what the job's framework runs, and export refuses a plan for another framework.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_cli.h"

namespace {

std::string tmp(const std::string& name) { return temp_path("cli_export", name); }

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(slurp(path)); }

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// The best plan of a Llama-3-8B search on 16 H100s with the options `extra`, written under tmp(dir).
std::string searched_plan(const std::string& extra, const std::string& dir) {
  auto r = run_mplan("search --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 64 --seq 8192 " + extra + " --top 1 --out " +
                     tmp(dir));
  EXPECT_EQ(r.code, 0) << r.err;
  return tmp(dir + "/plan-01.json");
}

// A searched Llama-3 plan with tp = 2 (so the export carries CUDA_DEVICE_MAX_CONNECTIONS).
const std::string& plan_file() {
  static std::string path = searched_plan("--fix tp=2", "plans");
  return path;
}

TEST(CliExport, MegatronArgumentsImportBackIntoThePlan) {
  auto ex = run_mplan("export --plan " + plan_file() + " --format megatron --out " + tmp("llama.sh"));
  ASSERT_EQ(ex.code, 0) << ex.err;
  std::string args = slurp(tmp("llama.sh"));
  EXPECT_TRUE(has(args, "export CUDA_DEVICE_MAX_CONNECTIONS=1")) << args;
  EXPECT_TRUE(has(args, "--rotary-base 500000")) << args;
  auto im = run_mplan("import --megatron-args " + tmp("llama.sh") + " --cluster dgx-h100 --out " + tmp("back.json"));
  ASSERT_EQ(im.code, 0) << im.err;
  nlohmann::json a = read_json(plan_file()), b = read_json(tmp("back.json"));
  nlohmann::json ma = a["model"], mb = b["model"];
  ma.erase("max_position_embeddings"), mb.erase("max_position_embeddings");  // RoPE: not an argument
  EXPECT_EQ(ma, mb);
  EXPECT_EQ(a["training"], b["training"]);
  nlohmann::json pa = a["parallel"], pb = b["parallel"];
  if (pa["schedule"] == "zb") pa.erase("schedule"), pb.erase("schedule");  // Megatron runs ZB-H1 plans as 1F1B
  EXPECT_EQ(pa, pb);
}

TEST(CliExport, ImportRefusesWhatItCannotRead) {
  auto ex = run_mplan("export --plan " + plan_file() + " --format megatron --out " + tmp("base.sh"));
  ASSERT_EQ(ex.code, 0) << ex.err;
  std::string args = slurp(tmp("base.sh"));
  // no WORLD_SIZE in the header and no --gpus
  std::string headless = args.substr(args.find("\n--") + 1);
  write(tmp("headless.sh"), headless);
  auto r = run_mplan("import --megatron-args " + tmp("headless.sh") + " --cluster dgx-h100");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--gpus")) << r.err;
  EXPECT_EQ(run_mplan("import --megatron-args " + tmp("headless.sh") + " --cluster dgx-h100 --gpus 16").code, 0);
  // a flag with a value that is not a number
  std::string bad = args;
  bad.replace(bad.find("--num-layers 32"), 15, "--num-layers x");
  write(tmp("bad.sh"), bad);
  r = run_mplan("import --megatron-args " + tmp("bad.sh") + " --cluster dgx-h100");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--num-layers")) << r.err;
  r = run_mplan("import --megatron-args " + tmp("missing.sh") + " --cluster dgx-h100");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--megatron-args")) << r.err;
}

TEST(CliExport, TorchtitanConfigurationOfEachRelease) {
  const std::string plan = searched_plan("--framework torchtitan", "tt");
  auto cur = run_mplan("export --plan " + plan + " --format torchtitan");
  ASSERT_EQ(cur.code, 0) << cur.err;
  EXPECT_TRUE(has(cur.out, "def mplan_plan() -> Trainer.Config:")) << cur.out;
  EXPECT_TRUE(has(cur.out, "--module mplan_llama3_8b --config mplan_plan")) << cur.out;
  auto v2 = run_mplan("export --plan " + plan + " --format torchtitan --torchtitan-version 0.2");
  ASSERT_EQ(v2.code, 0) << v2.err;
  EXPECT_TRUE(has(v2.out, "[parallelism]")) << v2.out;
  EXPECT_FALSE(has(v2.out, "pipeline_parallel_split_points")) << v2.out;
  auto bad = run_mplan("export --plan " + plan + " --format torchtitan --torchtitan-version 0.3");
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_TRUE(has(bad.err, "--torchtitan-version")) << bad.err;
  auto other = run_mplan("export --plan " + plan_file() + " --format megatron --torchtitan-version 0.2");
  EXPECT_EQ(other.code, 2) << other.err;
  // a Megatron plan is not exported as a torchtitan configuration
  auto fw = run_mplan("export --plan " + plan_file() + " --format torchtitan");
  EXPECT_EQ(fw.code, 2) << fw.err;
}

// The job's framework drives the search: Megatron-LM never gets ZB-H1 (it has no such schedule),
// torchtitan 1F1B or interleaved, MaxText GPipe; a --fix outside the framework is exit 2 naming it.
TEST(CliExport, SearchRanksOnlyTheFrameworksSchedules) {
  const std::string job =
      "search --model llama3-8b --cluster dgx-h100 --gpus 32 --gbs 64 --seq 4096 --fix pp=4 --top 20 "
      "--format json";
  for (auto [fw, allowed] : {std::pair<std::string, std::vector<std::string>>{"megatron", {"1f1b", "interleaved"}},
                             {"torchtitan", {"1f1b", "interleaved"}},
                             {"maxtext", {"gpipe"}}}) {
    auto r = run_mplan(job + " --framework " + fw);
    ASSERT_EQ(r.code, 0) << fw << ": " << r.err;
    auto rows = nlohmann::json::parse(r.out);
    ASSERT_FALSE(rows.empty()) << fw;
    for (const auto& row : rows) {
      std::string s = row["layout"]["schedule"];
      EXPECT_NE(std::find(allowed.begin(), allowed.end(), s), allowed.end()) << fw << " ranked " << s;
    }
  }
  auto zb = run_mplan("search --model llama3-8b --cluster dgx-h100 --gpus 32 --gbs 128 --seq 8192 --fix pp=4,schedule=zb");
  EXPECT_EQ(zb.code, 2) << zb.err;
  EXPECT_TRUE(has(zb.err, "--fix schedule=zb: megatron runs the pipeline schedules 1f1b, interleaved")) << zb.err;
  auto tp = run_mplan(
      "search --model llama3-8b --cluster dgx-h100 --gpus 32 --gbs 128 --seq 8192 --framework llm-foundry "
      "--fix tp=2");
  EXPECT_EQ(tp.code, 2) << tp.err;
  EXPECT_TRUE(has(tp.err, "--fix tp=2: llm-foundry has no tensor parallelism")) << tp.err;
}

// An exporter writes its own framework's configuration: a plan for another framework is exit 2 naming
// the plan's framework field.
TEST(CliExport, RefusesAPlanForAnotherFramework) {
  const std::string mt = searched_plan("--framework maxtext", "mt");
  for (const char* format : {"megatron", "torchtitan"}) {
    auto r = run_mplan("export --plan " + mt + " --format " + format);
    EXPECT_EQ(r.code, 2) << format << ": " << r.err;
    EXPECT_TRUE(has(r.err, "the plan is for framework 'maxtext' (plan.framework)")) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  auto plan = run_mplan("export --plan " + mt + " --format plan");
  EXPECT_EQ(plan.code, 0) << plan.err;
  auto tt = run_mplan("export --plan " + plan_file() + " --format torchtitan");
  EXPECT_EQ(tt.code, 2) << tt.err;
  EXPECT_TRUE(has(tt.err, "the plan is for framework 'megatron' (plan.framework)")) << tt.err;
}

TEST(CliExport, TrainRefusesASlidingWindowItCannotTrain) {
  if (run_mplan("train --help").code != 0) GTEST_SKIP() << "built without the executor";
  nlohmann::json plan = read_json(std::string(MPLAN_SOURCE_DIR) + "/data/plans/tiny.json");
  plan["model"]["window_size"] = 16;
  write(tmp("tiny_window.json"), plan.dump(2));
  auto r = run_mplan("train --plan " + tmp("tiny_window.json") + " --steps 1");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "model.window_size")) << r.err;
}

}  // namespace
