// Plans and cost parameters for simulator tests: a uniform GPT-style model whose stages are
// identical, a preset model on DGX H100 with a given layout (tests/core/plan_fixture.h), a report
// that must simulate, and a cost model with communication (and fixed overheads) switched off. Also
// used by the GUI's timeline tests.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/counting.h"
#include "core/plan.h"
#include "core/presets.h"
#include "simulator/cost_params.h"
#include "simulator/published.h"
#include "simulator/simulator.h"
#include "tests/core/plan_fixture.h"

namespace mplan {

inline Plan pipeline_only_plan(int pp, int vpp, int microbatches) {
  Plan p;
  ModelSpec m;
  m.name = "uniform";
  m.num_layers = 2 * pp * vpp;
  // wide layers, so the per-micro-batch embedding and head (memory-bound, linear in the width) stay
  // well under 1% of a stage's work
  m.hidden_size = 8192;
  m.ffn_hidden_size = 32768;
  m.num_attention_heads = m.num_query_groups = 64;
  m.kv_channels = 128;
  m.vocab_size = 8;  // negligible embedding/head so every stage does the same work
  m.activation = Activation::gelu;
  m.norm = NormKind::layernorm;
  m.tied_embeddings = false;
  m.position_embedding = PositionEmbedding::rope;
  p.model = m;
  p.cluster = *cluster_preset("dgx-h100");
  p.training = {int64_t(microbatches), 2048, Precision::bf16};
  p.parallel.world_size = pp;
  p.parallel.pp = pp;
  p.parallel.vpp = vpp;
  p.parallel.schedule = vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  p.parallel.micro_batch_size = 1;
  return p;
}

// The report of a plan that must simulate (a test failure naming the error, and an empty report, if not).
inline StepReport simulate_ok(const Plan& p, const CostParams& c) {
  auto r = simulate(p, c);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? r.value() : StepReport{};
}

// A row of the published CSVs' columns: the Llama-3-8B shape on 8 H100s with mbs 1, tp 1 and pp 1,
// and the columns `more` on top.
inline CsvRow llama3_8b_h100_row(const std::map<std::string, std::string>& more) {
  CsvRow r;
  r.f = {{"layers", "32"},    {"hidden", "4096"},   {"ffn_hidden", "14336"}, {"heads", "32"}, {"kv_heads", "8"},
         {"vocab", "128256"}, {"gpu_type", "H100"}, {"num_gpus", "8"},       {"mbs", "1"},    {"tp", "1"},
         {"pp", "1"}};
  for (const auto& [k, v] : more) r.f[k] = v;
  return r;
}

inline CostParams no_comm_params(ClusterSpec& c) {
  c.scale_up_bw_gbps = c.scale_out_bw_gbps = 1e12;
  c.scale_up_latency_us = c.scale_out_latency_us = 0;
  CostParams p = default_cost_params(c);
  p.kernel_overhead_us = 0;
  p.optimizer_overhead_s = 0;
  p.overlap_slowdown = 0;
  return p;
}

}  // namespace mplan
