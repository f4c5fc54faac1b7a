// Memory options that make a stated layout fit (see memory_options.h).
#include "simulator/memory_options.h"

#include <functional>
#include <vector>

#include "core/framework_profile.h"
#include "simulator/simulator.h"

namespace mplan {

namespace {

struct Option {
  std::string name;
  std::function<void(ParallelConfig&)> apply;
};

std::string modules_text(RecomputeModules s) { return join_names(to_names(s)); }

RecomputeModules modules(std::initializer_list<RecomputeModule> mods) {
  RecomputeModules s;
  for (RecomputeModule m : mods) s.add(m);
  return s;
}

// Selective recompute as the framework means it (core/framework_profile.h RematStyle).
void add_selective(const Plan& plan, std::vector<Option>& out) {
  const ParallelConfig& p = plan.parallel;
  const RematStyle style = framework_profile(plan.training.framework).remat_style;
  if (style == RematStyle::jax_policy) {
    for (RematPolicy pol :
         {RematPolicy::save_dot_except_mlp, RematPolicy::save_qkv_proj, RematPolicy::save_out_proj, RematPolicy::minimal})
      out.push_back({"recompute=selective remat_policy=" + to_string(pol), [pol](ParallelConfig& q) {
                       q.recompute = Recompute::selective;
                       q.remat_policy = pol;
                     }});
    return;
  }
  if (style == RematStyle::op_sac || !framework_memory(plan.training.framework).supports_recompute_modules) {
    if (p.recompute != Recompute::selective)
      out.push_back({"recompute=selective", [](ParallelConfig& q) { q.recompute = Recompute::selective; }});
    return;
  }
  using R = RecomputeModule;
  std::vector<RecomputeModules> sets = {modules({R::core_attn})};
  if (!plan.model.moe) {
    sets.push_back(modules({R::core_attn, R::layernorm}));
    sets.push_back(modules({R::core_attn, R::layernorm, R::mlp}));
  } else {
    sets.push_back(modules({R::layernorm, R::moe_act}));
    sets.push_back(modules({R::layernorm, R::moe}));
    if (plan.model.mla) sets.push_back(modules({R::mla_up_proj, R::layernorm, R::moe_act}));
  }
  for (RecomputeModules s : sets)
    out.push_back({"recompute=selective recompute_modules=" + modules_text(s), [s](ParallelConfig& q) {
                     q.recompute = Recompute::selective;
                     q.recompute_modules = s;
                   }});
}

// Every single option the framework offers for this plan that it does not use yet.
std::vector<Option> single_options(const Plan& plan) {
  const ParallelConfig& p = plan.parallel;
  const FrameworkMemory fm = framework_memory(plan.training.framework);
  const FrameworkProfile& fp = framework_profile(plan.training.framework);
  std::vector<Option> out;
  if (p.recompute != Recompute::full || p.recompute_num_layers != 0)
    out.push_back({"recompute=full", [](ParallelConfig& q) {
                     q.recompute = Recompute::full;
                     q.recompute_num_layers = 0;
                     q.remat_policy = RematPolicy::none;
                   }});
  if (p.recompute == Recompute::none || p.recompute == Recompute::selective) add_selective(plan, out);
  if (fm.supports_activation_offload && p.offload_modules.empty()) {
    OffloadModules o;
    if (plan.model.moe) {
      o.add(OffloadModule::expert_fc1);
      o.add(OffloadModule::moe_act);
    } else {
      o.add(OffloadModule::core_attn);
      o.add(OffloadModule::attn_proj);
    }
    out.push_back({"offload_modules=" + join_names(to_names(o)), [o](ParallelConfig& q) { q.offload_modules = o; }});
  }
  if (fp.supports_fp8_param_gather && is_fp8_family(plan.training.precision) && !p.fp8_param_gather)
    out.push_back({"fp8_param_gather=true", [](ParallelConfig& q) { q.fp8_param_gather = true; }});
  if (fm.supports_cross_entropy_fusion && !p.cross_entropy_fusion)
    out.push_back({"cross_entropy_fusion=true", [](ParallelConfig& q) { q.cross_entropy_fusion = true; }});
  return out;
}

// The plan with the option applied, simulated; nullopt when the layout rules refuse it or it does not fit.
std::optional<FitsWith> try_option(const Plan& plan, const CostParams& params, const std::vector<const Option*>& opts) {
  FitsWith f;
  f.plan = plan;
  for (const Option* o : opts) {
    o->apply(f.plan.parallel);
    f.option += (f.option.empty() ? "" : " ") + o->name;
  }
  if (!validate_layout(f.plan.model, f.plan.cluster, f.plan.training, f.plan.parallel).empty()) return std::nullopt;
  auto r = simulate(f.plan, params);
  if (!r || !r->fits) return std::nullopt;
  f.step_time_s = r->step_time_s;
  f.peak_memory_gib = r->peak_memory_gib;
  return f;
}

}  // namespace

std::optional<FitsWith> fits_with(const Plan& plan, const CostParams& params) {
  if (auto stated = simulate(plan, params); !stated || stated->fits) return std::nullopt;
  const std::vector<Option> singles = single_options(plan);
  std::optional<FitsWith> best;
  auto consider = [&](const std::vector<const Option*>& opts) {
    auto f = try_option(plan, params, opts);
    if (f && (!best || f->step_time_s < best->step_time_s)) best = std::move(f);
  };
  for (const Option& o : singles) consider({&o});
  if (best) return best;
  // no single option is enough: two together (a recompute or offloading choice with a model-state one)
  for (size_t i = 0; i < singles.size(); ++i)
    for (size_t k = i + 1; k < singles.size(); ++k)
      if (singles[i].name.substr(0, 9) != singles[k].name.substr(0, 9)) consider({&singles[i], &singles[k]});
  return best;
}

}  // namespace mplan
