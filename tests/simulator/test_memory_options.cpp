// fits_with: for a stated layout that does not fit, the memory option of its framework that makes it fit
// at the least predicted step time; none for a layout no option rescues, nothing a framework lacks.
#include <gtest/gtest.h>

#include "core/presets.h"
#include "sim_fixtures.h"
#include "simulator/memory_options.h"
#include "simulator/published.h"
#include "simulator/simulator.h"

using namespace mplan;

namespace {
// Llama-3-70B on 32 H100s, tp 4, pp 4, 8k tokens, nothing recomputed: activations overflow 80 GB
Plan tight() {
  Plan p = preset_plan("llama3-70b", 32, 64, 8192, 4, 4);
  p.parallel.zero = 1;
  return p;
}
double step_if_fits(const Plan& p) {
  auto r = simulate(p, default_cost_params(p.cluster));
  return r && r->fits ? r->step_time_s : -1;
}
}  // namespace

TEST(FitsWith, NamesTheCheapestOptionThatFits) {
  Plan p = tight();
  const CostParams prm = default_cost_params(p.cluster);
  auto stated = simulate(p, prm);
  ASSERT_TRUE(stated);
  ASSERT_FALSE(stated->fits) << stated->peak_memory_gib;
  auto f = fits_with(p, prm);
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->option.empty());
  EXPECT_LE(f->peak_memory_gib, stated->capacity_gib);
  auto again = simulate(f->plan, prm);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->fits);
  EXPECT_DOUBLE_EQ(again->step_time_s, f->step_time_s);
  // the layout itself is kept
  EXPECT_EQ(f->plan.parallel.tp, 4);
  EXPECT_EQ(f->plan.parallel.pp, 4);
  EXPECT_EQ(f->plan.parallel.micro_batch_size, p.parallel.micro_batch_size);
  // no cheaper option among those a user could pick by hand
  Plan full = p;
  full.parallel.recompute = Recompute::full;
  Plan sel = p;
  sel.parallel.recompute = Recompute::selective;
  for (const Plan& q : {full, sel}) {
    if (double s = step_if_fits(q); s > 0) {
      EXPECT_LE(f->step_time_s, s * (1 + 1e-12));
    }
  }
}

TEST(FitsWith, OnlyTheFrameworksOwnOptions) {
  Plan p = tight();
  p.training.framework = Framework::torchtitan;
  p.parallel.zero = 3;
  const CostParams prm = default_cost_params(p.cluster);
  auto stated = simulate(p, prm);
  ASSERT_TRUE(stated);
  ASSERT_FALSE(stated->fits) << "the test needs a torchtitan layout that does not fit as stated";
  auto f = fits_with(p, prm);
  ASSERT_TRUE(f);
  // torchtitan has no recompute modules, offloading or fp8 parameters (core/framework.h, framework_profile.h)
  EXPECT_EQ(f->option.find("recompute_modules"), std::string::npos) << f->option;
  EXPECT_EQ(f->option.find("offload_modules"), std::string::npos) << f->option;
  EXPECT_EQ(f->option.find("fp8_param_gather"), std::string::npos) << f->option;
}

TEST(FitsWith, NoneWhenNoOptionIsEnough) {
  // Llama-3.1-405B on 8 GPUs: its weights alone exceed the memory whatever is recomputed or offloaded
  Plan p = preset_plan("llama3.1-405b", 8, 8, 8192, 8, 1);
  p.parallel.zero = 1;
  const CostParams prm = default_cost_params(p.cluster);
  auto stated = simulate(p, prm);
  ASSERT_TRUE(stated);
  ASSERT_FALSE(stated->fits);
  EXPECT_FALSE(fits_with(p, prm));
}

TEST(FitsWith, NothingForALayoutThatFits) {
  Plan p = tight();
  p.parallel.recompute = Recompute::full;
  const CostParams prm = default_cost_params(p.cluster);
  auto stated = simulate(p, prm);
  ASSERT_TRUE(stated);
  ASSERT_TRUE(stated->fits);
  EXPECT_FALSE(fits_with(p, prm));
}

namespace {
// A Llama-3-8B-shaped row of the published CSVs' columns, on 8 H100s
CsvRow row_of(const std::string& source, const std::string& framework, const std::string& version, const std::string& precision,
              const std::string& recompute) {
  return llama3_8b_h100_row({{"row_id", "T-1"},
                             {"source_id", source},
                             {"model", "Llama 3.1 8B"},
                             {"framework", framework},
                             {"framework_version", version},
                             {"seq_len", "4096"},
                             {"gbs", "64"},
                             {"precision", precision},
                             {"recompute", recompute}});
}
}  // namespace

TEST(AsStated, UnstatedSettingsTakeTheReleasesDocumentedDefaults) {
  // NeMo 2.0 / Megatron-Bridge performance recipes: bf16 gradients, fp8 primary weights in fp8 recipes
  auto nemo = published_run_from_row(row_of("x", "NeMo 2.0 (Megatron-Core)", "NeMo 25.02", "fp8", ""), RowSettings::as_stated);
  ASSERT_TRUE(nemo) << nemo.error().message();
  EXPECT_TRUE(nemo->plan.parallel.grad_reduce_in_bf16);
  EXPECT_TRUE(nemo->plan.parallel.fp8_param_gather);
  EXPECT_EQ(nemo->plan.parallel.recompute, Recompute::none);
  // plain Megatron-Core keeps Megatron-LM's own defaults
  auto mcore = published_run_from_row(row_of("x", "Megatron-Core", "r0.8.0", "fp8", ""), RowSettings::as_stated);
  ASSERT_TRUE(mcore) << mcore.error().message();
  EXPECT_FALSE(mcore->plan.parallel.grad_reduce_in_bf16);
  EXPECT_FALSE(mcore->plan.parallel.fp8_param_gather);
  // Megatron-LM of 2021-22: no flash attention, dropout 0.1
  auto mlm = published_run_from_row(row_of("x", "Megatron-LM (2022)", "", "bf16", "full"), RowSettings::as_stated);
  ASSERT_TRUE(mlm) << mlm.error().message();
  EXPECT_EQ(mlm->plan.parallel.attention_backend, AttentionBackend::unfused);
  EXPECT_DOUBLE_EQ(mlm->plan.model.hidden_dropout, 0.1);
  // MaxText remats every layer unless told otherwise; torchtitan checkpoints every second block
  auto jax = published_run_from_row(row_of("x", "MaxText (JAX)", "", "bf16", ""), RowSettings::as_stated);
  ASSERT_TRUE(jax) << jax.error().message();
  EXPECT_EQ(jax->plan.parallel.recompute, Recompute::full);
  EXPECT_EQ(jax->plan.parallel.recompute_num_layers, 0);
  auto titan = published_run_from_row(row_of("x", "torchtitan (PyTorch FSDP2/DTensor)", "", "bf16", ""), RowSettings::as_stated);
  ASSERT_TRUE(titan) << titan.error().message();
  EXPECT_EQ(titan->plan.parallel.recompute, Recompute::full);
  EXPECT_EQ(titan->plan.parallel.recompute_num_layers, 16);
  EXPECT_NE(titan->notes.find("recompute not stated: torchtitan's default selective (layer)"), std::string::npos) << titan->notes;
  // a stated column wins over the default
  auto none = published_run_from_row(row_of("x", "MaxText (JAX)", "", "bf16", "none"), RowSettings::as_stated);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->plan.parallel.recompute, Recompute::none);
}

TEST(AsStated, RecipeFactsAreLeftOut) {
  // llm-foundry's benchmark rows ran its Triton attention kernel (data/run_facts, source S001): a recipe fact
  const CsvRow r = row_of("llmfoundry_mpt_benchmarks", "Composer/llm-foundry (PyTorch FSDP)", "", "bf16", "none");
  auto with = published_run_from_row(r, RowSettings::with_run_facts);
  auto stated = published_run_from_row(r, RowSettings::as_stated);
  ASSERT_TRUE(with && stated);
  EXPECT_EQ(with->plan.parallel.attention_backend, AttentionBackend::triton);
  EXPECT_EQ(stated->plan.parallel.attention_backend, AttentionBackend::flash);
  EXPECT_EQ(stated->notes.find("(recipe)"), std::string::npos) << stated->notes;
}
