// The planner's layout rules: each rule on its own, and agreement with validate_layout (the rules of
// `mplan simulate`) over a grid of layouts that includes invalid ones.
#include <gtest/gtest.h>

#include "planner/constraints.h"
#include "planner/layout.h"
#include "planner_test_util.h"

namespace mplan {
namespace {

using namespace planner;

Layout base_layout(int dp) {
  Layout l;
  l.dp = dp;
  return l;
}

TEST(Rules, EachRuleOnItsOwn) {
  Plan dense = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 64, 64, 4096);
  Plan moe = test::job(test::tiny_moe(), test::cluster("dgx-h100"), 64, 64, 4096);
  Plan moe_bias = moe;  // gpt-oss style: MoE with linear biases (Megatron: etp must be 1)
  moe_bias.model.add_bias_linear = moe_bias.model.add_qkv_bias = true;
  Plan titan = dense;  // torchtitan: all-gathered K/V only, no ZB-H1, ZeRO 0 or 3
  titan.training.framework = Framework::torchtitan;
  Plan fp8 = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 64, 64, 4096, Precision::fp8);
  fp8.model.ffn_hidden_size = 3088;  // 16 x 193: 1544 per rank at tp=2, not a multiple of 16
  Plan window = dense;               // sliding-window attention, and with attention sinks
  window.model.window_size = 128;
  Plan sinks = window;
  sinks.model.softmax_type = SoftmaxType::learnable;
  Plan unfused = dense;
  unfused.parallel.attention_backend = AttentionBackend::unfused;
  Job jd(dense), jm(moe), jb(moe_bias), jt(titan), j8(fp8), jw(window), js(sinks), ju(unfused);
  struct Case {
    const Job* job;
    Layout l;
    const char* rule;
    bool core;  // also a validate_layout rule
  };
  auto L = [](auto f) {
    Layout l = base_layout(64);
    f(l);
    return l;
  };
  std::vector<Case> cases = {
      {&jd, L([](Layout& l) { l.tp = 16, l.dp = 4; }), rule::tp_nvlink, false},
      {&jd, L([](Layout& l) { l.tp = 3, l.dp = 1; }), rule::tp_heads, true},
      {&jd, L([](Layout& l) { l.tp = 8, l.sp = 1, l.dp = 8; }), rule::tp_groups, true},  // 4 query groups
      {&jd, L([](Layout& l) { l.cp = 3, l.dp = 1; }), rule::cp_seq, true},
      {&jd, L([](Layout& l) { l.tp = 2, l.sp = 1, l.cp = 4, l.dp = 8; }), nullptr, true},  // valid
      {&jd, L([](Layout& l) { l.cp = 4, l.cp_comm = CpCommType::a2a, l.tp = 2, l.sp = 1, l.dp = 8; }), rule::cp_a2a, false},
      {&jm, L([](Layout& l) { l.ep = 3, l.dp = 64; }), rule::ep_experts, true},
      {&jm, L([](Layout& l) { l.ep = 16, l.etp = 2, l.tp = 2, l.sp = 1, l.dp = 4, l.pp = 8; }), rule::ep_tiling, true},
      {&jm, L([](Layout& l) { l.etp = 3, l.dp = 3; }), rule::etp_ffn, true},
      {&jb, L([](Layout& l) { l.etp = 2, l.tp = 2, l.sp = 1, l.dp = 32; }), rule::etp_bias, true},
      {&jb, L([](Layout& l) { l.etp = 1, l.tp = 2, l.sp = 1, l.dp = 32; }), nullptr, true},  // valid
      {&jd, L([](Layout& l) { l.pp = 8, l.vpp = 2, l.dp = 8, l.schedule = Schedule::interleaved; }), rule::chunks, true},
      {&jd, L([](Layout& l) { l.pp = 3, l.dp = 1; }), rule::layers_split, true},
      {&jd, L([](Layout& l) { l.mbs = 2, l.dp = 64; }), rule::gbs_dp, true},
      {&jd, L([](Layout& l) { l.pp = 2, l.vpp = 2, l.dp = 64, l.schedule = Schedule::interleaved; }), rule::interleaved_m, true},
      // the job's framework (core/framework.h): Megatron has no ZB-H1, torchtitan no p2p ring
      {&jd, L([](Layout& l) { l.pp = 2, l.dp = 32, l.schedule = Schedule::zero_bubble; }), rule::framework, false},
      {&jt, L([](Layout& l) { l.cp = 4, l.dp = 16, l.zero = 3, l.cp_comm = CpCommType::p2p; }), rule::framework, false},
      {&jt, L([](Layout& l) { l.cp = 4, l.dp = 16, l.zero = 3, l.cp_comm = CpCommType::allgather; }), nullptr, true},
      // Megatron with Transformer Engine (core/megatron_rules.h)
      {&j8, L([](Layout& l) { l.tp = 2, l.sp = 1, l.dp = 32; }), rule::fp8_shape, true},
      {&j8, L([](Layout& l) { l.tp = 1, l.dp = 64; }), nullptr, true},  // 3088 itself divides by 16
      {&jw, L([](Layout& l) { l.cp = 2, l.dp = 32, l.cp_comm = CpCommType::p2p; }), rule::cp_attention, true},
      {&jw, L([](Layout& l) { l.cp = 2, l.dp = 32, l.cp_comm = CpCommType::allgather; }), nullptr, true},
      {&js, L([](Layout& l) { l.cp = 2, l.dp = 32, l.cp_comm = CpCommType::allgather; }), rule::cp_attention, true},
      {&js, L([](Layout& l) { l.cp = 2, l.dp = 32, l.cp_comm = CpCommType::a2a; }), nullptr, true},
      {&ju, L([](Layout& l) { l.cp = 2, l.dp = 32; }), rule::cp_unfused, true},
  };
  for (const Case& c : cases) {
    auto got = first_broken_rule(*c.job, c.l, false);
    std::string name = short_name(c.l);
    if (!c.rule) {
      EXPECT_FALSE(got.has_value()) << name << ": " << (got ? *got : "");
    } else {
      ASSERT_TRUE(got.has_value()) << name;
      EXPECT_STREQ(*got, c.rule) << name;
    }
    if (c.core) {
      ParallelConfig p = to_parallel(c.l, c.job->model(), c.job->world, c.job->plan->parallel);
      p.world_size = c.l.tp * c.l.pp * c.l.cp * c.l.dp;
      auto v = validate_layout(c.job->model(), c.job->plan->cluster, c.job->plan->training, p);
      EXPECT_EQ(v.empty(), c.rule == nullptr) << name << (v.empty() ? "" : ": " + v.front());
    }
  }
}

// Over a grid (valid and invalid layouts alike) the planner's rules accept exactly what
// validate_layout accepts, up to the planner-only rules.
TEST(Rules, AgreeWithValidateLayout) {
  for (const ModelSpec& m : {test::tiny_dense(), test::tiny_moe(), test::tiny_gpt()}) {
    Plan j = test::job(m, test::cluster("dgx-h100"), 48, 48, 3072);
    Job job(j);
    int agree = 0;
    for (int tp : {1, 2, 3, 4, 6, 8})
      for (int pp : {1, 2, 3, 4, 8})
        for (int cp : {1, 2, 3})
          for (int vpp : {1, 2, 3})
            for (int pipe : {0, 1})
              for (int mbs : {1, 2})
                for (int ep : {1, 2, 4})
                  for (int etp : {1, 2}) {
                    if (48 % (tp * pp * cp) != 0) continue;
                    if (pipe && pp == 1) continue;
                    if ((ep > 1 || etp > 1) && !m.moe) continue;
                    Layout l;
                    l.tp = tp, l.pp = pp, l.cp = cp, l.vpp = vpp, l.mbs = mbs, l.ep = ep, l.etp = etp;
                    l.dp = 48 / (tp * pp * cp);
                    l.sp = tp > 1;
                    l.pipe = pipe ? PipeLayout::balanced : PipeLayout::even;
                    l.schedule = vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
                    ParallelConfig p = to_parallel(l, m, 48, ParallelConfig{});
                    bool core_ok = validate_layout(m, j.cluster, j.training, p).empty();
                    bool mine_ok = !first_broken_rule(job, l, true, false).has_value();
                    EXPECT_EQ(core_ok, mine_ok) << m.name << " " << short_name(l);
                    agree += core_ok == mine_ok;
                  }
    EXPECT_GT(agree, 100);
  }
}

TEST(Rules, LimitsAndChoiceCodes) {
  EXPECT_EQ(choice_code("recompute", "full"), 2);
  EXPECT_EQ(choice_code("schedule", "zb"), 3);
  EXPECT_EQ(choice_code("cp_comm", "a2a"), 1);
  EXPECT_EQ(choice_code("sp", "off"), 0);
  EXPECT_FALSE(choice_code("schedule", "fast").has_value());
  EXPECT_TRUE(check_limits({{"tp", 8}}, {{"tp", 8}, {"pp", 4}}, 64).ok());
  EXPECT_FALSE(check_limits({{"tp", 8}}, {{"tp", 4}}, 64).ok());
  EXPECT_FALSE(check_limits({{"tp", 3}}, {}, 64).ok());  // 3 does not divide 64 GPUs
  EXPECT_FALSE(check_limits({{"zero", 4}}, {}, 64).ok());
  EXPECT_FALSE(check_limits({{"schedule", 2}, {"vpp", 1}}, {}, 64).ok());
  EXPECT_FALSE(check_limits({{"recompute_layers", 2}, {"recompute", 1}}, {}, 64).ok());
  EXPECT_FALSE(check_limits({}, {{"tp", 0}}, 64).ok());
  Limits lim{{{"tp", 4}}, {{"pp", 8}}};
  EXPECT_TRUE(lim.allows("tp", 4));
  EXPECT_FALSE(lim.allows("tp", 2));
  EXPECT_TRUE(lim.allows("pp", 8));
  EXPECT_FALSE(lim.allows("pp", 16));
}

}  // namespace
}  // namespace mplan
