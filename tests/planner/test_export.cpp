// Exporters: Megatron-LM arguments parsed back give the same layout (round trip over the top layouts
// of several searches and hand-made layouts); Megatron's own constraints; torchtitan v0.1 TOML for the
// layouts it supports and errors that say why for the others.
#include <gtest/gtest.h>

#include <initializer_list>
#include <nlohmann/json.hpp>

#include "core/parallel_fields.h"
#include "planner/layout.h"
#include "planner/planner.h"
#include "planner_test_util.h"
#include "simulator/cost_params.h"

namespace mplan {
namespace {

void expect_round_trip(const Plan& plan) {
  std::string text = export_megatron_args(plan);
  auto back = parse_megatron_args(text);
  ASSERT_TRUE(back.ok()) << back.error().message() << "\n" << text;
  const ParallelConfig& a = plan.parallel;
  const ParallelConfig& b = back->parallel;
  std::string at = planner::short_name(planner::from_parallel(a)) + "\n" + text;
  // The fields the arguments carry as they are, compared through their plan JSON (keys of the table).
  const nlohmann::json ja = parallel_to_json(a), jb = parallel_to_json(b);
  auto same = [&](std::initializer_list<const char*> keys) {
    for (const char* key : keys) {
      EXPECT_NE(parallel_field(key), nullptr) << key << " is not a plan key";
      EXPECT_EQ(jb.value(key, nlohmann::json()), ja.value(key, nlohmann::json())) << key << "\n" << at;
    }
  };
  same({"tp", "pp", "vpp", "pipeline_layout", "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage", "cp",
        "zero", "micro_batch_size", "recompute", "recompute_num_layers", "overlap_grad_reduce", "attention_backend"});
  if (a.cp > 1) same({"cp_comm_type"});
  if (plan.model.moe) same({"ep", "etp", "moe_dispatcher", "moe_force_balance", "moe_a2a_overlap"});
  EXPECT_EQ(b.sp, a.sp && a.tp > 1) << at;
  EXPECT_EQ(b.tp_comm_overlap, a.tp_comm_overlap && a.sp && a.tp > 1) << at;
  Schedule want = a.schedule == Schedule::zero_bubble || a.schedule == Schedule::gpipe ? Schedule::one_f_one_b : a.schedule;
  EXPECT_EQ(b.schedule, want) << at;
  EXPECT_EQ(b.overlap_param_gather, a.overlap_param_gather && a.zero >= 1) << at;
  EXPECT_EQ(back->global_batch_size, plan.training.global_batch_size) << at;
  EXPECT_EQ(back->seq_length, plan.training.seq_length) << at;
  EXPECT_EQ(back->precision, plan.training.precision) << at;
  EXPECT_EQ(back->num_layers, plan.model.num_layers) << at;
  // Megatron's constraints
  bool has_sp = text.find("--sequence-parallel") != std::string::npos;
  EXPECT_EQ(has_sp, a.tp > 1 && a.sp) << at;
  if (text.find("--tp-comm-overlap") != std::string::npos) {
    EXPECT_TRUE(has_sp) << at;
  }
  if (a.recompute == Recompute::selective) {
    EXPECT_EQ(text.find("--recompute-method"), std::string::npos) << at;
  }
  if (text.find("--overlap-param-gather") != std::string::npos) {
    EXPECT_NE(text.find("--overlap-grad-reduce"), std::string::npos) << at;
    EXPECT_TRUE(text.find("--use-distributed-optimizer") != std::string::npos ||
                text.find("--use-megatron-fsdp") != std::string::npos)
        << at;
  }
  int vpp_options = (text.find("--num-layers-per-virtual-pipeline-stage") != std::string::npos) +
                    (text.find("--num-virtual-stages-per-pipeline-rank") != std::string::npos) +
                    (text.find("--pipeline-model-parallel-layout") != std::string::npos);
  EXPECT_LE(vpp_options, 1) << at;
  // grouped GEMM for MoE except in fp32 (Megatron-LM #2495 allows it with fp16); 'moe_act' recompute
  // needs it (transformer_config.py)
  if (plan.model.moe) {
    EXPECT_EQ(text.find("--moe-grouped-gemm") != std::string::npos,
              plan.training.precision != Precision::fp32 && plan.training.precision != Precision::tf32)
        << at;
  }
  if (text.find("moe_act") != std::string::npos) {
    EXPECT_NE(text.find("--moe-grouped-gemm"), std::string::npos) << at;
  }
}

TEST(Export, MegatronRoundTripOfSearchResults) {
  SearchOptions o;
  o.top_k = 25;
  int n = 0;
  for (const Plan& job : {test::job(test::tiny_dense(), test::cluster("dgx-h100", 6), 16, 64, 4096),
                          test::job(test::tiny_moe(), test::cluster("dgx-h100", 5), 16, 64, 2048, Precision::fp8),
                          test::job(test::tiny_gpt(), test::cluster("dgx-a100-80g", 3), 8, 32, 2048, Precision::fp16),
                          test::job(test::tiny_dense(), test::cluster("gb200-nvl72", 8), 64, 128, 8192, Precision::mxfp8)}) {
    auto r = search(job, shipped_calibration(), o);
    ASSERT_TRUE(r.ok());
    ASSERT_FALSE(r->top.empty());
    for (const auto& c : r->top) {
      expect_round_trip(c.plan);
      ++n;
    }
  }
  EXPECT_GE(n, 60);
}

TEST(Export, MegatronRoundTripOfHandMadeLayouts) {
  Plan p = test::job(model_preset("deepseek-v3").value(), test::cluster("dgx-h100"), 1024, 4096, 4096, Precision::fp8);
  ParallelConfig& q = p.parallel;
  q.tp = 2, q.sp = true, q.tp_comm_overlap = true, q.pp = 8, q.vpp = 2, q.schedule = Schedule::interleaved;
  q.pipeline_layout = balanced_pipeline_layout(p.model, 8, 2);
  q.ep = 32, q.etp = 1, q.cp = 2, q.cp_comm_type = CpCommType::a2a, q.zero = 3;
  q.recompute = Recompute::full, q.recompute_num_layers = 1;
  q.moe_dispatcher = MoeDispatcher::deepep, q.moe_force_balance = true, q.moe_a2a_overlap = true;
  expect_round_trip(p);
  std::string text = export_megatron_args(p);
  EXPECT_NE(text.find("--moe-token-dispatcher-type flex"), std::string::npos) << text;
  EXPECT_NE(text.find("--moe-flex-dispatcher-backend deepep"), std::string::npos) << text;
  EXPECT_NE(text.find("--overlap-moe-expert-parallel-comm"), std::string::npos) << text;
  EXPECT_NE(text.find("--multi-latent-attention"), std::string::npos);
  EXPECT_NE(text.find("--mtp-num-layers 1"), std::string::npos);
  EXPECT_NE(text.find("--moe-layer-freq \"([0]*3+[1]*58)\""), std::string::npos) << text;
  EXPECT_NE(text.find("--fp8-format hybrid"), std::string::npos);
  EXPECT_NE(text.find("--data-parallel-sharding-strategy optim_grads_params"), std::string::npos);
  EXPECT_NE(text.find("--recompute-method block"), std::string::npos);
  EXPECT_NE(text.find("mL\""), std::string::npos) << text;  // MTP and loss on the last stage

  Plan l = test::job(model_preset("llama3-70b").value(), test::cluster("dgx-h100"), 64, 128, 8192);
  l.parallel.tp = 4, l.parallel.sp = true, l.parallel.pp = 4, l.parallel.vpp = 5, l.parallel.schedule = Schedule::interleaved;
  l.parallel.recompute = Recompute::selective;
  expect_round_trip(l);
  EXPECT_NE(export_megatron_args(l).find("--num-layers-per-virtual-pipeline-stage 4"), std::string::npos);
  l.parallel.vpp = 1, l.parallel.schedule = Schedule::one_f_one_b;
  l.parallel.pp = 3, l.parallel.num_layers_in_first_pipeline_stage = 26, l.parallel.num_layers_in_last_pipeline_stage = 26;
  l.parallel.world_size = 48;
  l.parallel.zero = 0, l.parallel.recompute = Recompute::full;
  expect_round_trip(l);
  std::string t2 = export_megatron_args(l);
  EXPECT_NE(t2.find("--decoder-first-pipeline-num-layers 26"), std::string::npos);
  EXPECT_EQ(t2.find("--use-distributed-optimizer"), std::string::npos);
  EXPECT_EQ(t2.find("--overlap-param-gather"), std::string::npos);
  EXPECT_NE(t2.find("--recompute-method uniform"), std::string::npos);
  // tp 1: never --sequence-parallel, and so never --tp-comm-overlap
  Plan one = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 8, 16, 2048);
  one.parallel.sp = true;
  one.parallel.tp_comm_overlap = true;
  std::string t3 = export_megatron_args(one);
  EXPECT_EQ(t3.find("--sequence-parallel"), std::string::npos);
  EXPECT_EQ(t3.find("--tp-comm-overlap"), std::string::npos);
  // zero-bubble is named as not a Megatron option
  Plan zb = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 8, 16, 2048);
  zb.parallel.pp = 2, zb.parallel.schedule = Schedule::zero_bubble;
  EXPECT_NE(export_megatron_args(zb).find("zero-bubble"), std::string::npos);
}

TEST(Export, TorchtitanSupportedAndNot) {
  Plan p = test::job(model_preset("llama3-8b").value(), test::cluster("dgx-h100"), 64, 256, 8192);
  ParallelConfig& q = p.parallel;
  q.tp = 2, q.sp = true, q.pp = 4, q.vpp = 2, q.schedule = Schedule::interleaved, q.cp = 2, q.zero = 3;
  q.recompute = Recompute::selective;
  auto t = export_torchtitan_toml(p, TorchtitanVersion::v0_1);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_NE(t->find("data_parallel_shard_degree = 4"), std::string::npos) << *t;
  EXPECT_NE(t->find("tensor_parallel_degree = 2"), std::string::npos);
  EXPECT_NE(t->find("pipeline_parallel_schedule = \"Interleaved1F1B\""), std::string::npos);
  EXPECT_NE(t->find("context_parallel_degree = 2"), std::string::npos);
  EXPECT_NE(t->find("mode = \"selective\""), std::string::npos);
  // 8 stages -> 7 split points
  size_t splits = 0;
  for (size_t pos = 0; (pos = t->find("\"layers.", pos)) != std::string::npos; ++pos) ++splits;
  EXPECT_EQ(splits, 7u) << *t;
  Plan z1 = p;
  z1.parallel.zero = 1;
  auto e1 = export_torchtitan_toml(z1, TorchtitanVersion::v0_1);
  ASSERT_FALSE(e1.ok());
  EXPECT_NE(e1.error().message().find("ZeRO-1"), std::string::npos);
  Plan zb = p;
  zb.parallel.vpp = 1, zb.parallel.schedule = Schedule::zero_bubble;
  EXPECT_FALSE(export_torchtitan_toml(zb, TorchtitanVersion::v0_1).ok());
  Plan ddp = test::job(model_preset("llama3-8b").value(), test::cluster("dgx-h100"), 8, 64, 8192);
  ddp.parallel.zero = 0;
  auto d = export_torchtitan_toml(ddp, TorchtitanVersion::v0_1);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_NE(d->find("data_parallel_replicate_degree = 8"), std::string::npos);
}

}  // namespace
}  // namespace mplan
