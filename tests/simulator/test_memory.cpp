// Memory model: closed forms of each term (Megatron's 18 and 6 + 12/d bytes per parameter with
// d = dp x cp, Korthikanti's activations per recompute mode, interleaved warm-up counts per rank),
// monotonicity (more recompute or offloading -> less memory; larger dp -> less optimizer memory), the
// framework-specific accounting, and a published run that ran and therefore must fit.
#include <gtest/gtest.h>

#include <cmath>

#include "core/presets.h"
#include "core/schedule.h"
#include "simulator/memory.h"
#include "simulator/memory_states.h"
#include "simulator/published.h"
#include "simulator/simulator.h"
#include "simulator/workload.h"
#include "tests/simulator/sim_fixtures.h"

using namespace mplan;

namespace {

// Model-state bytes per parameter of stage 0 of a plan (the rank's params after TP/EP).
struct PerParam {
  double weights, gradients, optimizer;
};
PerParam per_param(const Plan& plan) {
  Workload w = build_workload(plan, default_cost_params(plan.cluster));
  const StageWork& st = w.stages[0];
  ModelStateBytes b = model_state_bytes(plan, st);
  double n = st.dense_params + st.expert_params;
  return {b.weights / n, b.gradients / n, b.optimizer / n};
}

Plan llama8b(int gpus, int tp, int cp, int zero, Precision prec = Precision::bf16) {
  Plan p = preset_plan("llama3-8b", gpus, 64, 8192, tp, 1);
  p.training.precision = prec;
  p.parallel.cp = cp;
  p.parallel.zero = zero;
  return p;
}

// Activation bytes one dense layer keeps per micro-batch (chunk of a one-stage plan minus the head).
double layer_act(Plan p) {
  CostParams prm = default_cost_params(p.cluster);
  p.model.num_layers = 2;
  double two = build_workload(p, prm).stages[0].chunks[0].act_bytes;
  p.model.num_layers = 1;
  double one = build_workload(p, prm).stages[0].chunks[0].act_bytes;
  return two - one;
}

}  // namespace

TEST(MemoryStates, MegatronEighteenBytesWithoutDistributedOptimizer) {
  PerParam b = per_param(llama8b(8, 1, 2, 0));
  EXPECT_DOUBLE_EQ(b.weights, 2.0);     // bf16 parameters
  EXPECT_DOUBLE_EQ(b.gradients, 4.0);   // fp32 main gradients
  EXPECT_DOUBLE_EQ(b.optimizer, 12.0);  // fp32 master + two Adam moments
}

TEST(MemoryStates, DistributedOptimizerShardsOverDataAndContextParallelRanks) {
  // 6 + 12/d with d = dp x cp (Megatron's optimizer shards over the data-parallel group with CP)
  for (auto [gpus, cp] : {std::pair{8, 2}, {8, 1}, {16, 4}, {8, 8}}) {
    Plan p = llama8b(gpus, 1, cp, 1);
    double d = double(p.parallel.dp()) * cp;
    PerParam b = per_param(p);
    EXPECT_DOUBLE_EQ(b.weights + b.gradients, 6.0) << gpus << " cp" << cp;
    EXPECT_NEAR(b.optimizer, 12.0 / d, 1e-12) << gpus << " cp" << cp;
  }
}

TEST(MemoryStates, Fp32TrainingAndReducedPrecisionOptimizers) {
  PerParam f = per_param(llama8b(8, 1, 1, 1, Precision::fp32));
  EXPECT_DOUBLE_EQ(f.weights + f.gradients, 8.0);  // Megatron's fp32 row: 8 + 8/d
  EXPECT_NEAR(f.optimizer, 8.0 / 8, 1e-12);
  Plan p = llama8b(8, 1, 1, 1);
  p.parallel.grad_reduce_in_bf16 = true;
  p.parallel.main_params = MainParams::remainder;
  PerParam r = per_param(p);
  EXPECT_DOUBLE_EQ(r.gradients, 2.0);
  EXPECT_NEAR(r.optimizer, (2.0 + 8.0) / 8, 1e-12);  // int16 remainders + fp32 moments (Apex/NeMo)
  p.parallel.adam_states_bf16 = true;
  p.parallel.main_params = MainParams::none;
  EXPECT_NEAR(per_param(p).optimizer, 4.0 / 8, 1e-12);
}

TEST(MemoryStates, ExpertsShardOverTheExpertDataParallelGroup) {
  Plan p = preset_plan("mixtral-8x7b", 64, 64, 4096, 2, 1, 1, 8);
  p.parallel.zero = 1;
  Workload w = build_workload(p, default_cost_params(p.cluster));
  const StageWork& st = w.stages[0];
  ModelStateBytes b = model_state_bytes(p, st);
  double edp = p.parallel.edp(), d = double(p.parallel.dp()) * p.parallel.cp;
  EXPECT_EQ(edp, 2 * 32 / 8);
  EXPECT_NEAR(b.optimizer, 12.0 * st.dense_params / d + 12.0 * st.expert_params / edp, 1.0);
}

TEST(MemoryStates, Fp8WeightCopies) {
  // without --fp8-param-gather TE caches an fp8 copy (+ transpose on Hopper) of every linear weight
  Plan p = llama8b(8, 1, 1, 1, Precision::fp8);
  Workload w = build_workload(p, default_cost_params(p.cluster));
  const StageWork& st = w.stages[0];
  double linear = st.dense_params - st.unquantized_params;
  EXPECT_NEAR(model_state_bytes(p, st).weights, st.dense_params * 2 + linear * 2, 1.0);
  p.parallel.fp8_param_gather = true;  // fp8 primary weights replace the bf16 copy of the linears
  EXPECT_NEAR(model_state_bytes(p, st).weights, st.unquantized_params * 2 + linear * 2, 1.0);
  p.cluster = *cluster_preset("dgx-b200");  // Blackwell: no transpose copy
  EXPECT_NEAR(model_state_bytes(p, st).weights, st.unquantized_params * 2 + linear * 1, 1.0);
  EXPECT_NEAR(fp8_weight_copy_bytes(Precision::mxfp8, "blackwell"), 2.0625, 1e-12);
}

TEST(MemoryStates, TorchtitanFsdp2ShardsSixteenBytesOverDpShardTimesCp) {
  Plan p = llama8b(8, 1, 4, 3);
  p.training.framework = Framework::torchtitan;
  Workload w = build_workload(p, default_cost_params(p.cluster));
  const StageWork& st = w.stages[0];
  ModelStateBytes b = model_state_bytes(p, st);
  const double d = 8;  // dp 2 x cp 4
  EXPECT_NEAR(b.optimizer, 8.0 * st.dense_params / d, 1.0);
  // fp32 shards + the current and prefetched blocks gathered in bf16 + the unsharded root module
  EXPECT_NEAR(b.weights, 4.0 * st.dense_params / d + 2 * 2 * st.layer_params + 2 * st.unquantized_params, 1.0);
  EXPECT_NEAR(b.gradients, 4.0 * st.dense_params / d + st.layer_params * (2 + 4), 1.0);
}

TEST(Activations, KorthikantiPerRecomputeMode) {
  // GPT-style layer with dropout (Korthikanti et al. 2022, Table 2): 34 s b h / t with SP, plus the
  // 5 a s^2 b / t of the unfused scores; selective (core_attn) drops the scores; full keeps 2 s b h / t
  Plan p = preset_plan("gpt3-175b", 8, 8, 2048, 8, 1);
  p.model.hidden_dropout = p.model.attention_dropout = 0.1;
  p.parallel.attention_backend = AttentionBackend::unfused;
  const double s = 2048, h = double(p.model.hidden_size), a = p.model.num_attention_heads, t = 8;
  EXPECT_NEAR(layer_act(p), s * h * (34 + 5 * a * s / h) / t, 1.0);
  p.parallel.recompute = Recompute::selective;
  EXPECT_NEAR(layer_act(p), s * h * 34 / t, 1.0);
  p.parallel.recompute = Recompute::full;
  EXPECT_NEAR(layer_act(p), s * h * 2 / t, 1.0);
}

TEST(Activations, RecomputeModulesDropWhatMegatronDrops) {
  Plan p = preset_plan("gpt3-175b", 8, 8, 2048, 8, 1);  // flash attention, no dropout, GELU, f = 4h
  const double sbh_t = 2048.0 * p.model.hidden_size / 8;
  p.parallel.recompute = Recompute::selective;
  double core = layer_act(p);
  p.parallel.recompute_modules = RecomputeModules{uint32_t(RecomputeModule::core_attn) | uint32_t(RecomputeModule::layernorm)};
  // layernorm: the two norm outputs (inputs of the QKV and FC1 GEMMs), 2 s b h / t each
  EXPECT_NEAR(core - layer_act(p), 4 * sbh_t, 1.0);
  double ln = layer_act(p);
  p.parallel.recompute_modules.add(RecomputeModule::mlp);
  // mlp: the GELU input (4h wide) and the FC2 input (4h wide), 8 s b h / t each
  EXPECT_NEAR(ln - layer_act(p), 16 * sbh_t, 1.0);
}

TEST(Activations, Fp8SavesQuantizedGemmInputs) {
  Plan p = preset_plan("llama3-8b", 8, 8, 4096, 1, 1);
  double bf16 = layer_act(p);
  p.training.precision = Precision::fp8;
  double fp8 = layer_act(p);
  const double T = 4096, h = 4096, f = 14336;
  // QKV, FC1 and FC2 inputs at 1 byte instead of 2; the projection keeps an fp8 copy besides the bf16
  // attention output
  EXPECT_NEAR(bf16 - fp8, T * (h + h + f) - T * h, 1.0);
}

TEST(Activations, OffloadingMovesModuleInputsToHost) {
  Plan p = preset_plan("mixtral-8x7b", 8, 8, 4096, 1, 1, 1, 8);
  CostParams prm = default_cost_params(p.cluster);
  Workload a = build_workload(p, prm);
  p.parallel.offload_modules = OffloadModules{uint32_t(OffloadModule::expert_fc1) | uint32_t(OffloadModule::moe_act)};
  Workload b = build_workload(p, prm);
  EXPECT_LT(b.stages[0].chunks[0].act_bytes, a.stages[0].chunks[0].act_bytes);
  EXPECT_GE(b.stages[0].chunks[0].F.total(), a.stages[0].chunks[0].F.total());  // PCIe transfers are not free
}

TEST(Activations, InterleavedWarmupMatchesMegatron) {
  // Megatron-Core get_pp_rank_microbatches: 2(pp-r-1) + (vpp-1) pp warm-up forwards (g = pp), capped at
  // m vpp; a rank holds warm-up + 1 (micro-batch, chunk) activations at its peak
  for (int pp : {2, 4, 8})
    for (int vpp : {2, 3, 4})
      for (int m : {pp, 2 * pp, 4 * pp})
        for (int r = 0; r < pp; ++r) {
          int total = m * vpp;
          int warmup = std::min(total, 2 * (pp - r - 1) + (vpp - 1) * pp);
          int expect = warmup < total ? warmup + 1 : total;
          EXPECT_EQ(max_in_flight(schedule_actions(Schedule::interleaved, pp, vpp, m, r)), expect)
              << "pp" << pp << " vpp" << vpp << " m" << m << " rank" << r;
        }
  // 1F1B: pp - r micro-batches on rank r
  for (int r = 0; r < 4; ++r) EXPECT_EQ(max_in_flight(schedule_actions(Schedule::one_f_one_b, 4, 1, 8, r)), 4 - r);
}

TEST(Memory, MonotoneInRecomputeAndDataParallelSize) {
  CostParams prm;
  auto peak = [&](const Plan& p) {
    auto r = simulate(p, default_cost_params(p.cluster));
    EXPECT_TRUE(r) << (r ? "" : r.error().message());
    return r ? r->memory.activations : 0.0;
  };
  for (const char* model : {"llama3-70b", "qwen3-30b-a3b", "deepseek-v3"}) {
    bool moe = std::string(model) != "llama3-70b";
    Plan p = preset_plan(model, 64, 64, 4096, moe ? 1 : 8, 4, 1, moe ? 8 : 1);
    p.parallel.zero = 1;
    if (p.model.num_layers % 4 != 0) p.parallel.pipeline_layout = balanced_pipeline_layout(p.model, 4, 1);
    double none = peak(p);
    p.parallel.recompute = Recompute::selective;
    double sel = peak(p);
    using R = RecomputeModule;
    p.parallel.recompute_modules = RecomputeModules{uint32_t(R::core_attn) | uint32_t(R::layernorm)};
    double sel_ln = peak(p);
    p.parallel.recompute_modules.add(moe ? R::moe : R::mlp);
    double sel_mlp = peak(p);
    p.parallel.recompute = Recompute::full;
    p.parallel.recompute_modules = {};
    double full = peak(p);
    EXPECT_GE(none, sel) << model;
    EXPECT_GT(sel, sel_ln) << model;
    EXPECT_GT(sel_ln, sel_mlp) << model;
    EXPECT_GT(sel_mlp, full) << model;
  }
  // larger dp: less optimizer memory per rank (the rest unchanged)
  double prev = 1e30;
  for (int gpus : {8, 16, 32, 64}) {
    Plan p = llama8b(gpus, 8, 1, 1);
    p.training.global_batch_size = 64;
    auto r = simulate(p, default_cost_params(p.cluster));
    ASSERT_TRUE(r);
    EXPECT_LT(r->memory.optimizer, prev);
    prev = r->memory.optimizer;
  }
}

TEST(Memory, ReservedAndAllocatedAreConsistent) {
  Plan p = preset_plan("llama3-70b", 64, 64, 8192, 8, 4, 5);
  auto r = simulate(p, default_cost_params(p.cluster));
  ASSERT_TRUE(r);
  const MemoryBreakdown& m = r->memory;
  EXPECT_NEAR(m.total(), r->peak_memory_gib, 1e-9);
  EXPECT_GT(m.outside_allocator, 0);  // NCCL buffers and the CUDA context
  EXPECT_LT(m.reserved(), m.total());
  EXPECT_LT(m.allocated(), m.reserved());
  EXPECT_NEAR(m.allocated(),
              m.weights + m.gradients + m.optimizer + m.activations + (m.other - m.allocator_slack) -
                  (m.outside_allocator - m.comm_buffers),
              1e-9);
}

TEST(PublishedRuns, NemoLlama3EightBillionWithContextParallelFits) {
  // NeMo 24.07, Llama-3-8B on 8 H100 80GB, tp1 cp2, fp8, mbs 1, seq 8192 (the row as the table states
  // it; the recipe's optimizer storage and gradient dtype come from data/run_facts): a run that ran
  CsvRow r = llama3_8b_h100_row({{"row_id", "test-nemo2407-llama3-8b"},
                                 {"source_id", "nemo_2407_perf_summary"},
                                 {"framework", "NeMo 1.0 / Megatron-Core (NeMo container)"},
                                 {"workload", "pretrain"},
                                 {"model", "LLAMA3-8B"},
                                 {"seq_len", "8192"},
                                 {"gbs", "128"},
                                 {"cp", "2"},
                                 {"precision", "fp8"}});
  auto run = published_run_from_row(r);
  ASSERT_TRUE(run) << run.error().message();
  const ParallelConfig& p = run->plan.parallel;
  EXPECT_EQ(p.zero, 1);
  EXPECT_TRUE(p.grad_reduce_in_bf16);
  EXPECT_EQ(p.main_params, MainParams::remainder);
  auto sim = simulate(run->plan, default_cost_params(run->plan.cluster));
  ASSERT_TRUE(sim);
  EXPECT_TRUE(sim->fits) << sim->peak_memory_gib << " GiB";
  // the same layout under Megatron-LM's defaults (fp32 gradients and master weights) does not fit:
  // the optimizer storage the recipe chose is what makes it fit
  Plan q = run->plan;
  q.parallel.grad_reduce_in_bf16 = false;
  q.parallel.main_params = MainParams::fp32;
  auto sq = simulate(q, default_cost_params(q.cluster));
  ASSERT_TRUE(sq);
  EXPECT_FALSE(sq->fits) << sq->peak_memory_gib << " GiB";
  EXPECT_GT(sq->peak_memory_gib, sim->peak_memory_gib + 15);
}

// The planner costs stages with equal stage_memory_inputs once (planner/bounds.cpp's memory lines):
// stage_memory reads nothing else of a StageWork, for every framework's accounting and ZeRO level.
TEST(StageMemoryInputs, StageMemoryReadsNothingElseOfAStage) {
  for (Framework fw : {Framework::megatron, Framework::torchtitan})
    for (const char* model : {"llama3-8b", "mixtral-8x7b"})
      for (int zero = 0; zero <= 3; ++zero) {
        Plan p = preset_plan(model, 64, 64, 4096, 2, 4, 1, std::string(model) == "mixtral-8x7b" ? 4 : 1);
        p.training.framework = fw;
        p.parallel.zero = zero;
        const CostParams prm = default_cost_params(p.cluster);
        Workload w = build_workload(p, prm);
        for (size_t s = 0; s < w.stages.size(); ++s) {
          StageWork other = w.stages[s];  // every other field changed
          other.chunks.clear();
          other.layers += 3;
          other.dp_grad_s += 1, other.dp_param_gather_s += 1, other.optimizer_s += 1, other.dp_buckets += 2;
          ASSERT_TRUE(stage_memory_inputs(other) == stage_memory_inputs(w.stages[s]));
          for (double act : {0.0, 1e9}) {
            MemoryBreakdown a = stage_memory(p, w.stages[s], act, prm), b = stage_memory(p, other, act, prm);
            EXPECT_EQ(a.total(), b.total()) << model << " zero " << zero << " stage " << s;
            EXPECT_EQ(a.weights, b.weights);
            EXPECT_EQ(a.gradients, b.gradients);
            EXPECT_EQ(a.optimizer, b.optimizer);
            EXPECT_EQ(a.other, b.other);
          }
          // and each input counts: a stage that differs in one of them is not taken for another
          for (double StageWork::*f :
               {&StageWork::dense_params, &StageWork::expert_params, &StageWork::unquantized_params, &StageWork::layer_params}) {
            StageWork d = w.stages[s];
            d.*f += 1;
            EXPECT_FALSE(stage_memory_inputs(d) == stage_memory_inputs(w.stages[s]));
          }
        }
      }
}
