// No silent defaults beside --plan (issue 33): every subcommand that reads a plan file is found from
// `mplan --help`, and each flag its --help lists is given beside --plan. A flag is either one of the
// run's own settings or overrides listed here (the run's steps, output, --calibration, --force, verify's
// --framework and --db ...), or it is refused with exit 2 naming it; never silently ignored.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "run_cli.h"

namespace {

const std::string kPlan = std::string(MPLAN_SOURCE_DIR) + "/data/plans/tiny.json";

// The flags of each plan-reading subcommand that the plan does not decide (not run by the walk).
const std::map<std::string, std::set<std::string>>& kept_beside_plan() {
  static const std::map<std::string, std::set<std::string>> m = {
      {"simulate", {"--calibration", "--force", "--format", "--trace"}},
      {"explain", {"--calibration", "--force"}},
      {"export", {"--format", "--torchtitan-version", "--out"}},
      {"train",
       {"--backend", "--steps", "--seed", "--data", "--runs-db", "--checkpoint-dir", "--checkpoint-every", "--resume", "--format",
        "--lr", "--warmup", "--lr-decay-steps", "--weight-decay", "--clip-grad", "--moe-aux-loss-coeff", "--peak-gflops",
        "--max-ranks-per-core"}},
      {"verify", {"--backend", "--steps", "--db", "--format", "--seed", "--data", "--runs-db", "--framework", "--measured"}},
      {"runs import",
       {"--db", "--megatron-log", "--job", "--csv", "--warmup", "--allow-mismatch", "--tz", "--no-predict", "--host",
        "--git-commit", "--started-at", "--software", "--tag", "--format"}},
  };
  return m;
}

struct Flag {
  std::string name, type;  // type: "" for a flag without a value, else CLI11's "INT", "TEXT:{a,b}" ...
};

// The options of a --help text ("  --tp INT:..." / "  -h,--help" / "  --megatron-log,--log TEXT ...").
std::vector<Flag> help_flags(const std::string& help) {
  std::vector<Flag> out;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string name, type;
    words >> name >> type;
    if (name.rfind('-', 0) != 0) continue;
    if (auto comma = name.rfind(",--"); comma != std::string::npos && name.rfind("-h,", 0) != 0) name = name.substr(0, comma);
    if (name == "-h,--help" || name == "--help") continue;
    if (name.rfind("--", 0) != 0) continue;
    bool typed = type.rfind("TEXT", 0) == 0 || type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 ||
                 type.rfind("FLOAT", 0) == 0 || type.rfind("NUMBER", 0) == 0 || type.rfind("REQUIRED", 0) == 0;
    out.push_back({name, typed ? type : ""});
  }
  return out;
}

// A value CLI11 accepts for the option: the last of a {choice,list}, else a small number or a word.
std::string value_for(const Flag& f) {
  if (f.type.empty()) return "";
  if (auto b = f.type.find('{'); b != std::string::npos) {
    std::string list = f.type.substr(b + 1, f.type.find('}') - b - 1);
    return list.substr(list.rfind(',') + 1);
  }
  if (f.type.rfind("FLOAT", 0) == 0 || f.type.rfind("NUMBER", 0) == 0) return "0.5";
  if (f.type.rfind("INT", 0) == 0 || f.type.rfind("UINT", 0) == 0) return "2";
  return "x";
}

// Subcommands (and `runs` children) named in a --help listing.
std::vector<std::string> subcommands(const std::string& help) {
  std::vector<std::string> out;
  std::istringstream in(help);
  bool section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Subcommands:", 0) == 0) {
      section = true;
      continue;
    }
    std::istringstream words(line);
    std::string w;
    if (section && line.rfind("  ", 0) == 0 && (words >> w)) out.push_back(w);
  }
  return out;
}

}  // namespace

TEST(CliPlanFlags, EveryFlagBesidePlanIsRefusedOrTheRunsOwn) {
  std::vector<std::string> subs;
  for (const std::string& s : subcommands(run_mplan("--help").out)) {
    if (s == "runs") {
      for (const std::string& c : subcommands(run_mplan("runs --help").out)) subs.push_back("runs " + c);
    } else {
      subs.push_back(s);
    }
  }
  ASSERT_GE(subs.size(), 10u);
  int walked = 0, refused = 0;
  for (const std::string& sub : subs) {
    if (sub == "gui" || sub == "runs list") continue;  // gui passes its arguments on; `runs list --plan` is a plan key
    std::vector<Flag> flags = help_flags(run_mplan(sub + " --help").out);
    bool reads_plan = false;
    for (const Flag& f : flags) reads_plan = reads_plan || f.name == "--plan";
    if (!reads_plan) continue;
    SCOPED_TRACE(sub);
    ASSERT_TRUE(kept_beside_plan().count(sub)) << "'" << sub << "' reads --plan: list the flags the plan does not decide";
    ++walked;
    for (const Flag& f : flags) {
      if (f.name == "--plan" || kept_beside_plan().at(sub).count(f.name)) continue;
      std::string v = value_for(f);
      auto r = run_mplan(sub + " --plan " + kPlan + " " + f.name + (v.empty() ? "" : " " + v));
      EXPECT_EQ(r.code, 2) << f.name << " " << v << " beside --plan was not refused:\n" << r.out << r.err;
      EXPECT_NE(r.err.find(f.name), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("beside --plan"), std::string::npos) << r.err;
      ++refused;
    }
  }
  std::cout << "[ walked   ] " << walked << " subcommands read --plan; " << refused << " flags refused beside it\n";
  EXPECT_GE(walked, 6);    // simulate, explain, export, train, verify, runs import
  EXPECT_GE(refused, 40);  // simulate's job and layout flags, train's --moe-capacity-factor
}

TEST(CliPlanFlags, SimulateNamesEveryRefusedFlagAndKeepsItsOverrides) {
  auto r = run_mplan("simulate --plan " + kPlan + " --tp 2 --gpus 64 --framework torchtitan");
  EXPECT_EQ(r.code, 2);
  for (const char* f : {"--tp", "--gpus", "--framework"}) EXPECT_NE(r.err.find(f), std::string::npos) << f << ": " << r.err;
  EXPECT_NE(r.err.find("edit the plan file"), std::string::npos) << r.err;
  auto ok = run_mplan("simulate --plan " + kPlan + " --format json");
  EXPECT_EQ(ok.code, 0) << ok.err;
  // without --plan the same flags describe the job
  auto job =
      run_mplan("simulate --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 64 --seq 2048 --tp 2 --framework torchtitan");
  EXPECT_EQ(job.code, 0) << job.err;
}

TEST(CliPlanFlags, TrainTakesTheMoeCapacityFactorOfThePlan) {
  auto r = run_mplan("train --plan " + kPlan + " --moe-capacity-factor 1.25 --steps 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--moe-capacity-factor"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("moe_capacity_factor"), std::string::npos) << r.err;
}
