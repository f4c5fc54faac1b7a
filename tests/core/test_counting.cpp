// Parameter counts against published figures and model FLOPs against the closed forms of
// Narayanan et al. 2021 / Korthikanti et al. 2022.
#include <gtest/gtest.h>

#include "core/counting.h"
#include "core/presets.h"
#include "tests/core/expect_util.h"

using namespace mplan;

namespace {
ModelSpec preset(const std::string& n) { return test::value_or_fail(model_preset(n)); }
using test::expect_within;
}  // namespace

TEST(Counting, PublishedParameterCounts) {
  expect_within(count_params(preset("llama3-8b")).total, 8.03e9, 0.005);
  expect_within(count_params(preset("llama3-70b")).total, 70.55e9, 0.005);
  expect_within(count_params(preset("llama3.1-405b")).total, 405.85e9, 0.005);
  expect_within(count_params(preset("gpt3-175b")).total, 174.6e9, 0.005);
  auto mix = count_params(preset("mixtral-8x7b"));
  expect_within(mix.total, 46.70e9, 0.005);
  expect_within(mix.active, 12.88e9, 0.005);
  auto ds = count_params(preset("deepseek-v3"));
  expect_within(ds.total, 671e9, 0.005);
  // "37B activated" is rounded to the billion: the model card counts without the embedding table.
  EXPECT_NEAR(ds.active_excl_embedding, 37e9, 0.5e9);
  EXPECT_GT(ds.mtp, 10e9);  // the MTP module (~14B with its embedding/head shared) is not in the total
}

TEST(Counting, ExactSmallModel) {
  // GPT-2 124M: 124,439,808 parameters (tied head, learned positions, biases).
  ModelSpec m;
  m.name = "gpt2";
  m.num_layers = 12;
  m.hidden_size = 768;
  m.ffn_hidden_size = 3072;
  m.num_attention_heads = m.num_query_groups = 12;
  m.kv_channels = 64;
  m.vocab_size = 50257;
  m.activation = Activation::gelu;
  m.norm = NormKind::layernorm;
  m.tied_embeddings = true;
  m.position_embedding = PositionEmbedding::learned;
  m.max_position_embeddings = 1024;
  m.add_bias_linear = m.add_qkv_bias = true;
  EXPECT_EQ(count_params(m).total, 124439808.0);
}

TEST(Counting, FlopsMatchNarayananClosedForm) {
  // GPT (MHA, GELU, f=4h): F = 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) with full attention,
  // and s/(12h) with the causal halving.
  ModelSpec m = preset("gpt3-175b");
  double B = 1536, s = 2048, l = m.num_layers, h = double(m.hidden_size), V = double(m.vocab_size);
  double full = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  double causal = 72 * B * s * l * h * h * (1 + s / (12 * h) + V / (12 * l * h));
  EXPECT_NEAR(model_flops_per_step(m, 1536, 2048, AttentionFlops::full) / full, 1.0, 1e-12);
  EXPECT_NEAR(model_flops_per_step(m, 1536, 2048, AttentionFlops::causal) / causal, 1.0, 1e-12);
}

TEST(Counting, FlopsGqaSwigluMatchesMegatronReadmeFormula) {
  // Megatron README (2024): 12 B s L h^2 [(1 + g/a + s/h) p + (f/h)(3/2) + V/(2 L h)] for SwiGLU + GQA,
  // full attention, p = 1 when kv_channels*heads = h.
  ModelSpec m = preset("llama3-70b");
  double B = 8, s = 8192, L = m.num_layers, h = double(m.hidden_size), V = double(m.vocab_size);
  double a = m.num_attention_heads, g = m.num_query_groups, f = double(m.ffn_hidden_size);
  double want = 12 * B * s * L * h * h * ((1 + g / a + s / h) + (f / h) * 1.5 + V / (2 * L * h));
  EXPECT_NEAR(model_flops_per_step(m, 8, 8192, AttentionFlops::full) / want, 1.0, 1e-12);
}

TEST(Counting, MoeFlopsCountOnlyRoutedExperts) {
  ModelSpec m = preset("mixtral-8x7b");
  ModelSpec dense = m;
  dense.moe.reset();
  // top-2 of identical experts = twice the dense MLP FLOPs
  double moe = model_flops_per_step(m, 1, 4096, AttentionFlops::causal);
  double d = model_flops_per_step(dense, 1, 4096, AttentionFlops::causal);
  double mlp_one = 6.0 * 4096 * m.hidden_size * m.ffn_hidden_size * 3 * m.num_layers;
  EXPECT_NEAR(moe - d, mlp_one, mlp_one * 1e-12);
}

TEST(Counting, StageParamsSumToTotal) {
  ModelSpec m = preset("llama3-70b");
  ParallelConfig p;
  p.world_size = 64;
  p.tp = 8;
  p.pp = 4;
  p.sp = true;
  auto st = params_per_stage(m, p);
  double sum = 0;
  for (auto& s : st) sum += s.total();
  ParamCounts c = count_params(m);
  EXPECT_NEAR(sum, c.total, 1.0);
  EXPECT_GT(st[0].total(), st[1].total());  // embedding on the first stage
}
