// `mplan runs import|list|show|tag` and `mplan regress` through the built binary: outputs, and the
// exit codes the CI gate relies on (0 ok, 1 regression, 2 bad input).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../cli/run_cli.h"
#include "log_gen.h"
#include "runs_test_util.h"

using nlohmann::json;

namespace {

std::string data(const std::string& f) { return runs_test::data_path(f); }

std::string import_csv_cmd(const std::string& db, const std::string& csv, const std::string& date) {
  return "runs import --db " + db + " --csv " + csv + " --plan " + data("llama3_8b_h100_dp8.plan.json") + " --started-at " +
         date + " --no-predict --format json";
}

std::string write_csv(const std::string& dir, const std::string& name, double step_s) {
  std::string text = "step,step_time_s,peak_memory_gib\n";
  for (int i = 1; i <= 30; ++i) text += std::to_string(i) + "," + std::to_string(step_s * (1 + 0.001 * (i % 3))) + ",60\n";
  runs_test::write_bytes(dir + "/" + name, text);
  return dir + "/" + name;
}

}  // namespace

TEST(RunsCli, ImportListShowTag) {
  std::string dir = runs_test::temp_dir(), db = dir + "/runs.db";
  auto imp = run_mplan("runs import --db " + db + " --megatron-log " + data("megatron_2024_llama3_8b.log") + " --plan " +
                       data("llama3_8b_h100_dp8.plan.json") + " --host dgx-07 --software cuda=12.4 --tag nightly --format json");
  ASSERT_EQ(imp.code, 0) << imp.err;
  json j = json::parse(imp.out);
  EXPECT_EQ(j["id"], 1);
  EXPECT_EQ(j["warmup_excluded"], 10);
  EXPECT_NEAR(j["summary"]["mfu"].get<double>(), 0.42, 0.005);
  EXPECT_EQ(j["host"], "dgx-07");
  EXPECT_EQ(j["software"]["cuda"], "12.4");
  EXPECT_TRUE(j.contains("prediction_stored"));
  EXPECT_NE(j["warmup_rule"].get<std::string>().find("first 10 iterations"), std::string::npos);

  auto tab = run_mplan("runs import --db " + db + " --megatron-log " + data("megatron_2023_llama2_7b_resumed.log") + " --plan " +
                       data("llama2_7b_a100_tp2_pp2.plan.json") + " --no-predict");
  ASSERT_EQ(tab.code, 0) << tab.err;
  EXPECT_NE(tab.out.find("imported run 2"), std::string::npos) << tab.out;
  EXPECT_NE(tab.out.find("2 warm-up steps excluded"), std::string::npos) << tab.out;
  EXPECT_NE(tab.out.find("warm-up rule:"), std::string::npos);
  EXPECT_NE(tab.out.find("restarts at iteration 110"), std::string::npos);
  EXPECT_NE(tab.out.find("not stored (--no-predict)"), std::string::npos);

  auto list = run_mplan("runs list --db " + db + " --format json");
  ASSERT_EQ(list.code, 0) << list.err;
  json l = json::parse(list.out);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0]["id"], 1);  // 2024 log is newer than the 2023 one
  auto table = run_mplan("runs list --db " + db);
  ASSERT_EQ(table.code, 0);
  EXPECT_NE(table.out.find(j["plan_key"].get<std::string>()), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("40/50"), std::string::npos) << table.out;

  auto show = run_mplan("runs show --db " + db + " 1 --format json");
  ASSERT_EQ(show.code, 0) << show.err;
  json s = json::parse(show.out);
  EXPECT_EQ(s["steps"].size(), 50u);
  EXPECT_EQ(s["plan"]["schema"], "mplan.plan/1");
  auto steps = run_mplan("runs show --db " + db + " 1 --steps");
  ASSERT_EQ(steps.code, 0);
  EXPECT_NE(steps.out.find("warm-up"), std::string::npos);

  EXPECT_EQ(run_mplan("runs tag --db " + db + " 2 golden").code, 0);
  json s2 = json::parse(run_mplan("runs show --db " + db + " 2 --format json").out);
  EXPECT_EQ(s2["tags"], json::array({"golden"}));
  EXPECT_EQ(run_mplan("runs list --db " + db + " --tag golden --format json").out.find("\"id\": 1,"), std::string::npos);
  auto missing = run_mplan("runs tag --db " + db + " 99 golden");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no run with id 99"), std::string::npos);
  EXPECT_EQ(run_mplan("runs tag --db " + db + " 2 golden --remove").code, 0);
}

TEST(RunsCli, RegressGatesCiWithExitCodes) {
  std::string dir = runs_test::temp_dir(), db = dir + "/runs.db";
  for (int i = 0; i < 5; ++i) {
    auto r = run_mplan(import_csv_cmd(db, write_csv(dir, "ok" + std::to_string(i) + ".csv", 16.0 + 0.02 * i),
                                      "2024-05-0" + std::to_string(i + 1)));
    ASSERT_EQ(r.code, 0) << r.err;
  }
  auto fine = run_mplan("regress --db " + db);
  EXPECT_EQ(fine.code, 0) << fine.out << fine.err;
  EXPECT_NE(fine.out.find("0 regression(s) in 1 plan(s)"), std::string::npos) << fine.out;

  auto slow = run_mplan(import_csv_cmd(db, write_csv(dir, "slow.csv", 19.0), "2024-05-09"));  // -16% MFU
  ASSERT_EQ(slow.code, 0) << slow.err;
  auto bad = run_mplan("regress --db " + db + " --plot " + dir + "/mfu.svg");
  EXPECT_EQ(bad.code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("REGRESSION"), std::string::npos) << bad.out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/mfu.svg"));
  auto js = run_mplan("regress --db " + db + " --format json");
  EXPECT_EQ(js.code, 1);
  json r = json::parse(js.out);
  EXPECT_EQ(r["regressions"], 1);
  EXPECT_EQ(r["plans"][0]["status"], "regression");
  EXPECT_NEAR(r["plans"][0]["change_pct"].get<double>(), (16.04 / 19.0 - 1) * 100, 0.5);
  EXPECT_EQ(run_mplan("regress --db " + db + " --threshold 20").code, 0);

  auto png = run_mplan("regress --db " + db + " --plot " + dir + "/mfu.png");
  if (png.code == 2) {
    EXPECT_NE(png.err.find("not built"), std::string::npos) << png.err;
  } else {
    EXPECT_EQ(png.code, 1) << png.err;
    EXPECT_EQ(runs_test::read_bytes(dir + "/mfu.png").substr(1, 3), "PNG");
  }

  EXPECT_EQ(run_mplan("regress --db " + db + " --baseline golden").code, 2);  // no run tagged
  ASSERT_EQ(run_mplan("runs tag --db " + db + " 1 golden").code, 0);
  EXPECT_EQ(run_mplan("regress --db " + db + " --baseline golden").code, 1);
  EXPECT_EQ(run_mplan("regress --db " + db + " --baseline last-1").code, 1);
}

TEST(RunsCli, BadInputExitsTwo) {
  std::string dir = runs_test::temp_dir(), db = dir + "/runs.db";
  std::string plan = " --plan " + data("llama3_8b_h100_dp8.plan.json");
  std::string log = " --megatron-log " + data("megatron_2024_llama3_8b.log");
  EXPECT_EQ(run_mplan("runs list").code, 2);                  // --db is required
  auto typo = run_mplan("regress --db " + dir + "/typo.db");  // a mistyped --db must not pass the gate
  EXPECT_EQ(typo.code, 2);
  EXPECT_NE(typo.err.find("no such file"), std::string::npos) << typo.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/typo.db"));
  EXPECT_EQ(run_mplan("runs import --db " + db + plan).code, 2);                         // no source
  EXPECT_EQ(run_mplan("runs import --db " + db + plan + log + " --csv x.csv").code, 2);  // two sources
  EXPECT_EQ(run_mplan("runs import --db " + db + log + " --plan /nonexistent.json").code, 2);
  auto mism = run_mplan("runs import --db " + db + log + " --plan " + data("llama2_7b_a100_tp2_pp2.plan.json"));
  EXPECT_EQ(mism.code, 2);
  EXPECT_NE(mism.err.find("--allow-mismatch"), std::string::npos) << mism.err;
  EXPECT_EQ(run_mplan("runs import --db " + db + plan + log + " --started-at yesterday").code, 2);
  runs_test::write_bytes(dir + "/bad.csv", "step,speed\n1,2\n");
  EXPECT_EQ(run_mplan("runs import --db " + db + plan + " --csv " + dir + "/bad.csv").code, 2);
  EXPECT_FALSE(std::filesystem::exists(db));  // nothing was imported, no database created

  runs_test::write_bytes(dir + "/foreign.db", "not a database at all");
  auto foreign = run_mplan("runs list --db " + dir + "/foreign.db");
  EXPECT_EQ(foreign.code, 2);
  EXPECT_NE(foreign.err.find("untouched"), std::string::npos);
  EXPECT_EQ(runs_test::read_bytes(dir + "/foreign.db"), "not a database at all");

  ASSERT_EQ(run_mplan("runs import --db " + db + plan + log + " --no-predict").code, 0);
  EXPECT_EQ(run_mplan("regress --db " + db).code, 0);  // a first run has no baseline: not a failure
  EXPECT_EQ(run_mplan("regress --db " + db + " --baseline last-0").code, 2);
  EXPECT_EQ(run_mplan("regress --db " + db + " --threshold -3").code, 2);
  EXPECT_EQ(run_mplan("regress --db " + db + " --plot " + dir + "/mfu.jpg").code, 2);
  EXPECT_EQ(run_mplan("regress --db " + db + " --format yaml").code, 2);
  EXPECT_EQ(run_mplan("runs show --db " + db + " 7").code, 2);
}

namespace {

// A log file written by log_gen.h: `jobs` launches of the plan (the first one with `smoke_layers` layers
// when > 0).
std::string write_log(const std::string& path, const mplan::Plan& plan, int smoke_layers) {
  std::string text;
  if (smoke_layers > 0) {
    mplan::Plan smoke = plan;
    smoke.model.num_layers = smoke_layers;
    log_gen::LaunchSpec s;
    s.args = log_gen::megatron_args(smoke);
    s.first = 10, s.last = 30;
    text += log_gen::megatron_launch(smoke, s);
  }
  log_gen::LaunchSpec s;
  s.args = log_gen::megatron_args(plan);
  s.first = 10, s.last = 200, s.t0 = 900;
  text += "START TIME: Wed Jun 12 10:14:58 CEST 2024\n" + log_gen::megatron_launch(plan, s);
  runs_test::write_bytes(path, text);
  return path;
}

}  // namespace

TEST(RunsCli, MultiJobFilesPerRankFilesAndPlanChecks) {
  std::string dir = runs_test::temp_dir(), db = dir + "/runs.db";
  std::string plan_file = data("llama3_8b_h100_dp8.plan.json");
  mplan::Plan plan = runs_test::load_plan("llama3_8b_h100_dp8.plan.json");
  std::string log = write_log(dir + "/slurm-42.out", plan, 2);
  std::string base = "runs import --db " + db + " --plan " + plan_file + " --no-predict ";
  // Two jobs; the smoke job does not match the plan: exit 2, nothing imported, the jobs are listed.
  auto both = run_mplan(base + "--megatron-log " + log);
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("num_layers = 2 but the plan has model.num_layers = 32"), std::string::npos) << both.err;
  EXPECT_NE(both.err.find("job(s) 2 match the plan: import one with --job N"), std::string::npos) << both.err;
  EXPECT_NE(both.err.find("nothing was imported"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(db));
  auto job2 = run_mplan(base + "--megatron-log " + log + " --job 2 --format json");
  ASSERT_EQ(job2.code, 0) << job2.err;
  json j = json::parse(job2.out);
  EXPECT_EQ(j["source_job"], 2);
  EXPECT_EQ(j["summary"]["steps_total"], 20);
  EXPECT_EQ(j["started_at"], "2024-06-12T08:15:00Z");  // 10:15:00 local, CEST stated by the Slurm header
  EXPECT_EQ(j["framework"], "Megatron-LM");
  EXPECT_EQ(run_mplan(base + "--megatron-log " + log + " --job 3").code, 2);
  // Every job, with --allow-mismatch: one run per job, in one transaction.
  auto all = run_mplan(base + "--megatron-log " + log + " --allow-mismatch --format json");
  ASSERT_EQ(all.code, 0) << all.err;
  json a = json::parse(all.out);
  ASSERT_EQ(a["runs"].size(), 2u);
  EXPECT_EQ(a["runs"][0]["source_job"], 1);
  EXPECT_EQ(a["runs"][0]["summary"]["steps_total"], 3);

  // Per-rank files: rank 0 has the arguments, the last rank the iteration lines.
  std::string text = runs_test::read_bytes(log), rank0, rank7;
  std::istringstream in(text.substr(text.find("START TIME")));
  for (std::string line; std::getline(in, line);) (line.find("iteration ") != std::string::npos ? rank7 : rank0) += line + "\n";
  runs_test::write_bytes(dir + "/rank0.log", rank0);
  runs_test::write_bytes(dir + "/rank7.log", rank7);
  auto pair = run_mplan(base + "--megatron-log " + dir + "/rank0.log --megatron-log " + dir + "/rank7.log");
  EXPECT_EQ(pair.code, 0) << pair.err;
  auto only0 = run_mplan(base + "--megatron-log " + dir + "/rank0.log");
  EXPECT_EQ(only0.code, 2);
  EXPECT_NE(only0.err.find("last rank"), std::string::npos) << only0.err;

  // A plan for the wrong GPU: the MFU would exceed 100%.
  json wrong = json::parse(runs_test::read_bytes(plan_file));
  wrong["cluster"]["gpu"] = json::parse(runs_test::read_bytes(data("llama2_7b_a100_tp2_pp2.plan.json")))["cluster"]["gpu"];
  runs_test::write_bytes(dir + "/a100.plan.json", wrong.dump());
  auto gpu =
      run_mplan("runs import --db " + db + " --plan " + dir + "/a100.plan.json --no-predict --megatron-log " + log + " --job 2");
  EXPECT_EQ(gpu.code, 2);
  EXPECT_NE(gpu.err.find("exceeds 100%"), std::string::npos) << gpu.err;

  // Anything else: the formats that are read, and the CSV import.
  runs_test::write_bytes(dir + "/other.log", "step 1 loss 2.3 time 1.2s\nstep 2 loss 2.2 time 1.1s\n");
  auto other = run_mplan(base + "--megatron-log " + dir + "/other.log");
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.err.find("NeMo 2.0"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("--csv"), std::string::npos);
  EXPECT_EQ(run_mplan(base + "--megatron-log " + log + " --job 2 --tz Mars/Olympus").code, 2);

  // Absent values are shown as "—".
  auto show = run_mplan("runs show --db " + db + " 1 --steps");
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("—"), std::string::npos) << show.out;  // no prediction stored (--no-predict)
  json steps = json::parse(run_mplan("runs show --db " + db + " 1 --format json").out)["steps"];
  EXPECT_TRUE(steps[0]["peak_memory_gib"].is_null() || steps[0]["peak_memory_gib"].is_number());
  EXPECT_TRUE(steps[0]["reported_tokens_per_s_per_gpu"].is_null());
}

TEST(RunsCli, RegressAfterTuningAndOnANoisyFlatSeries) {
  std::string dir = runs_test::temp_dir(), db = dir + "/runs.db";
  // Step times: 16 s for five runs, tuned to 12.8 s (+25% MFU) over two runs, three runs there, then 5% slower.
  std::vector<double> times = {16.0, 16.02, 15.98, 16.01, 15.99, 14.5, 12.8, 12.81, 12.79, 12.8};
  for (size_t i = 0; i < times.size(); ++i) {
    auto r = run_mplan(import_csv_cmd(db, write_csv(dir, "t" + std::to_string(i) + ".csv", times[i]),
                                      "2024-05-" + std::string(i < 9 ? "0" : "") + std::to_string(i + 1)));
    ASSERT_EQ(r.code, 0) << r.err;
  }
  auto ok = run_mplan("regress --db " + db);
  EXPECT_EQ(ok.code, 0) << ok.out;
  auto drop = run_mplan(import_csv_cmd(db, write_csv(dir, "drop.csv", 12.8 / 0.95), "2024-05-20"));
  ASSERT_EQ(drop.code, 0) << drop.err;
  auto bad = run_mplan("regress --db " + db + " --format json");
  EXPECT_EQ(bad.code, 1) << bad.out;
  json r = json::parse(bad.out);
  EXPECT_EQ(r["plans"][0]["status"], "regression");
  EXPECT_EQ(r["plans"][0]["level_shifts"].size(), 2u);  // the two tuning steps
  EXPECT_EQ(run_mplan("regress --db " + db + " --baseline best-of-last-5").code, 1);

  // A flat series with 2% run-to-run noise stays ok.
  std::string db2 = dir + "/flat.db";
  std::vector<double> noise = {1.0, 1.021, 0.984, 1.012, 0.991, 1.018, 0.979, 1.006, 0.995, 1.019, 0.983};
  for (size_t i = 0; i < noise.size(); ++i) {
    auto res = run_mplan(import_csv_cmd(db2, write_csv(dir, "f" + std::to_string(i) + ".csv", 16.0 * noise[i]),
                                        "2024-06-" + std::string(i < 9 ? "0" : "") + std::to_string(i + 1)));
    ASSERT_EQ(res.code, 0) << res.err;
  }
  auto flat = run_mplan("regress --db " + db2);
  EXPECT_EQ(flat.code, 0) << flat.out;
  EXPECT_NE(flat.out.find(" ok"), std::string::npos) << flat.out;
}
