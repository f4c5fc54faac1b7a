// When a stated layout does not fit in GPU memory: the memory option the framework offers that makes it
// fit at the least predicted step time — selective recompute (Megatron's recompute modules, PyTorch's
// op-level checkpointing, a JAX remat policy), full recompute, fine-grained activation offloading, fp8
// parameters (Megatron --fp8-param-gather), a fused cross-entropy — alone or two together. Only options
// the plan's framework has (core/framework.h, core/framework_profile.h) and layouts validate_layout
// accepts are tried; the parallel layout itself (tp, pp, dp, ZeRO, micro-batch) is left as stated.
#pragma once
#include <optional>
#include <string>

#include "core/plan.h"
#include "simulator/cost_params.h"

namespace mplan {

struct FitsWith {
  std::string option;  // the settings to add, as plan fields: "recompute=selective recompute_modules=core_attn,layernorm"
  double step_time_s = 0;
  double peak_memory_gib = 0;
  Plan plan;  // the stated plan with the option applied
};

// The cheapest option that makes `plan` fit; nullopt when none does (also when the plan fits already).
std::optional<FitsWith> fits_with(const Plan& plan, const CostParams& params);

}  // namespace mplan
