// Target framework drives search (issue 16): for each framework the search space and the ranked plans
// hold only what its profile (core/framework.h framework_runs, FrameworkMemory::zero_levels) says it
// runs — pipeline schedules, context-parallel exchanges, tensor/pipeline/context parallelism, even
// splits, ZeRO levels — and they offer all of it; a --fix outside it is refused naming the framework.
#include <gtest/gtest.h>

#include <set>

#include "core/presets.h"
#include "planner/constraints.h"
#include "planner/layout.h"
#include "planner/planner.h"
#include "planner/space.h"
#include "planner_test_util.h"
#include "simulator/cost_params.h"

namespace mplan {
namespace {

const Framework kFrameworks[] = {Framework::megatron, Framework::torchtitan, Framework::llm_foundry, Framework::maxtext};

// A dense and a MoE job, with a sequence long enough for context parallelism to be searched.
std::vector<Plan> jobs(Framework fw) {
  std::vector<Plan> out = {test::job(test::tiny_dense(), test::cluster("dgx-h100"), 16, 64, 8192),
                           test::job(test::tiny_moe(), test::cluster("dgx-h100"), 16, 64, 4096)};
  out[1].model.num_layers = 8;  // stages of equal layers exist (MaxText splits evenly only)
  for (Plan& p : out) p.training.framework = fw;
  return out;
}

// Every variant of every structure of the space, with each ZeRO level the framework has.
TEST(FrameworkSearch, SpaceHoldsExactlyWhatTheFrameworkRuns) {
  for (Framework fw : kFrameworks)
    for (const Plan& plan : jobs(fw)) {
      const std::string what = to_string(fw) + " " + plan.model.name;
      planner::Job job(plan);
      planner::Limits lim;
      planner::Space space = planner::enumerate_structures(job, lim, false);
      const FrameworkRuns runs = framework_runs(fw);
      const unsigned zeros = framework_memory(fw).zero_levels;
      std::set<Schedule> schedules;
      std::set<CpCommType> exchanges;
      bool tp = false, pp = false, cp = false;
      int64_t checked = 0;
      for (const planner::Structure& st : space.structures) {
        std::vector<planner::Layout> vars;
        planner::structure_variants(job, lim, st, space.pipes[size_t(st.pipe_id)], &vars, nullptr);
        for (planner::Layout v : vars)
          for (int z = 0; z <= 3; ++z) {
            if (!((zeros >> z) & 1u)) continue;
            v.zero = z;
            ParallelConfig p = planner::to_parallel(v, plan.model, job.world, plan.parallel);
            std::string no = framework_refusal(plan.training, p);
            ASSERT_TRUE(no.empty()) << what << " " << planner::short_name(v) << ": " << no;
            if (v.pp > 1) schedules.insert(v.schedule);
            if (v.cp > 1) exchanges.insert(v.cp_comm);
            tp = tp || v.tp > 1, pp = pp || v.pp > 1, cp = cp || v.cp > 1;
            ++checked;
          }
      }
      EXPECT_GT(checked, 10) << what;
      // ... and all of it: every schedule it lists (GPipe only where it is the only one: 1F1B has its
      // bubble with fewer activations held), every exchange without a model restriction
      for (Schedule s : {Schedule::one_f_one_b, Schedule::interleaved, Schedule::zero_bubble, Schedule::gpipe}) {
        bool listed = (runs.schedules >> unsigned(s)) & 1u;
        if (s == Schedule::gpipe) listed = listed && !((runs.schedules >> unsigned(Schedule::one_f_one_b)) & 1u);
        EXPECT_EQ(schedules.count(s) > 0, listed) << what << " schedule " << to_string(s);
      }
      for (CpCommType c : {CpCommType::p2p, CpCommType::a2a, CpCommType::allgather})
        EXPECT_EQ(exchanges.count(c) > 0, runs_cp_comm(fw, c)) << what << " cp_comm " << to_string(c);
      EXPECT_EQ(tp, runs.tensor_parallel) << what;
      EXPECT_EQ(pp, runs.pipeline_parallel) << what;
      EXPECT_EQ(cp, runs.context_parallel) << what;
    }
}

// What search ranks, with the pipeline fixed on: Megatron never ZB-H1 (it has no such schedule),
// torchtitan 1F1B or interleaved, MaxText GPipe; every plan passes the framework's check and
// validate_layout.
TEST(FrameworkSearch, RankedSchedulesAreTheFrameworks) {
  Plan job = test::job(*model_preset("llama3-8b"), test::cluster("dgx-h100"), 32, 64, 4096);
  SearchOptions o;
  o.top_k = 30;
  o.fix = {{"pp", 4}};
  std::map<Framework, std::set<Schedule>> want = {{Framework::megatron, {Schedule::one_f_one_b, Schedule::interleaved}},
                                                  {Framework::torchtitan, {Schedule::one_f_one_b, Schedule::interleaved}},
                                                  {Framework::maxtext, {Schedule::gpipe}}};
  for (const auto& [fw, allowed] : want) {
    job.training.framework = fw;
    auto r = search(job, shipped_calibration(), o);
    ASSERT_TRUE(r.ok()) << to_string(fw) << ": " << r.error().message();
    ASSERT_FALSE(r->top.empty()) << to_string(fw);
    std::set<Schedule> seen;
    for (const Candidate& c : r->top) {
      const ParallelConfig& p = c.plan.parallel;
      seen.insert(p.schedule);
      EXPECT_TRUE(allowed.count(p.schedule)) << to_string(fw) << " ranked " << to_string(p.schedule);
      EXPECT_EQ(framework_refusal(c.plan.training, p), "") << to_string(fw);
      EXPECT_TRUE(validate_layout(c.plan.model, c.plan.cluster, c.plan.training, p).empty()) << to_string(fw);
    }
    EXPECT_EQ(seen.count(Schedule::zero_bubble), 0u) << to_string(fw);
  }
  // the same job on the same GPUs without the framework rule would rank ZB-H1: it shortens the bubble
  job.training.framework = Framework::megatron;
  Plan zb = job;
  zb.parallel.pp = 4, zb.parallel.tp = 1, zb.parallel.micro_batch_size = 1, zb.parallel.zero = 1;
  zb.parallel.recompute = Recompute::full;
  Plan one = zb;
  zb.parallel.schedule = Schedule::zero_bubble;
  CostParams prm = shipped_calibration().params_for(job.cluster.gpu);
  auto a = simulate(zb, prm), b = simulate(one, prm);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(a->step_time_s, b->step_time_s)
      << "ZB-H1 is faster in the simulator, so leaving it out is the framework rule's doing";
}

// Searched plans of every framework pass its check on a wider set of jobs (ZeRO levels, CP exchanges,
// no TP/PP/CP for llm-foundry).
TEST(FrameworkSearch, RankedPlansPassTheFrameworksCheck) {
  for (Framework fw : kFrameworks)
    for (const Plan& job : jobs(fw)) {
      SearchOptions o;
      o.top_k = 20;
      auto r = search(job, shipped_calibration(), o);
      ASSERT_TRUE(r.ok()) << to_string(fw) << ": " << r.error().message();
      for (const Candidate& c : r->top) EXPECT_EQ(framework_refusal(c.plan.training, c.plan.parallel), "") << to_string(fw);
    }
}

TEST(FrameworkSearch, FixOutsideTheFrameworkIsRefused) {
  struct Case {
    Framework fw;
    std::map<std::string, int> fix;
    const char* want;
  };
  const Case cases[] = {
      {Framework::megatron, {{"schedule", 3}}, "--fix schedule=zb: megatron runs the pipeline schedules 1f1b, interleaved"},
      {Framework::torchtitan,
       {{"schedule", 3}},
       "--fix schedule=zb: torchtitan runs the pipeline schedules gpipe, 1f1b, interleaved"},
      {Framework::torchtitan, {{"cp_comm", 1}}, "--fix cp_comm=a2a: torchtitan exchanges context-parallel K/V by allgather"},
      {Framework::torchtitan, {{"zero", 1}}, "--fix zero=1: framework torchtitan has zero 0, 3"},
      {Framework::llm_foundry, {{"tp", 2}}, "--fix tp=2: llm-foundry has no tensor parallelism"},
      {Framework::llm_foundry, {{"pp", 2}}, "--fix pp=2: llm-foundry has no pipeline parallelism"},
      {Framework::maxtext, {{"schedule", 1}, {"pp", 2}}, "--fix schedule=1f1b: maxtext runs the pipeline schedules gpipe"},
      {Framework::maxtext, {{"vpp", 2}}, "--fix vpp=2: maxtext has no interleaved schedule (it runs gpipe)"},
  };
  for (const Case& c : cases) {
    Plan job = jobs(c.fw).front();
    SearchOptions o;
    o.fix = c.fix;
    auto r = search(job, shipped_calibration(), o);
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_NE(r.error().message().find(c.want), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("(--framework " + to_string(c.fw) + ")"), std::string::npos) << r.error().message();
  }
  // what the framework runs is accepted: schedule=1f1b also names "no pipeline" at pp = 1
  Plan foundry = jobs(Framework::llm_foundry).front();
  SearchOptions o;
  o.fix = {{"schedule", 1}, {"zero", 3}};
  auto ok = search(foundry, shipped_calibration(), o);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_FALSE(ok->top.empty());
}

// The framework check itself: one message naming the field and the framework's choices.
TEST(FrameworkSearch, RefusalNamesTheField) {
  Plan p = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 16, 64, 8192);
  p.parallel.pp = 2, p.parallel.schedule = Schedule::zero_bubble;
  EXPECT_EQ(framework_refusal(p.training, p.parallel),
            "schedule zb: framework megatron runs the pipeline schedules 1f1b, interleaved (interleaved means vpp > 1, the "
            "others vpp = 1)");
  p.parallel.schedule = Schedule::one_f_one_b;
  EXPECT_EQ(framework_refusal(p.training, p.parallel), "");
  p.training.framework = Framework::maxtext;
  p.parallel.micro_batch_size = 2;  // 64 / (2 x 8) = 4 micro-batches: a multiple of pp = 2
  p.parallel.schedule = Schedule::gpipe;
  EXPECT_EQ(framework_refusal(p.training, p.parallel), "zero=1: framework maxtext has zero 3");
  p.parallel.zero = 3;
  EXPECT_EQ(framework_refusal(p.training, p.parallel), "");
  p.parallel.micro_batch_size = 8;  // 64 / (8 x 8) = 1 micro-batch for 2 stages
  EXPECT_NE(framework_refusal(p.training, p.parallel).find("needs a multiple of pp=2"), std::string::npos);
  p.parallel.micro_batch_size = 2;
  p.parallel.num_layers_in_first_pipeline_stage = 3, p.parallel.num_layers_in_last_pipeline_stage = 5;
  EXPECT_NE(framework_refusal(p.training, p.parallel).find("splits the layers evenly"), std::string::npos);
}

}  // namespace
}  // namespace mplan
