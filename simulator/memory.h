// Per-rank memory of a pipeline stage: weights, gradients and optimizer states by precision and ZeRO
// level (Megatron-LM's bytes-per-parameter accounting; experts sharded over EP x ETP and their
// optimizer over expert-DP), peak activations from the simulated schedule, communication buffers and
// allocator/context overhead.
#pragma once
#include "core/plan.h"
#include "simulator/cost_params.h"
#include "simulator/simulator.h"
#include "simulator/workload.h"

namespace mplan {

MemoryBreakdown stage_memory(const Plan& plan, const StageWork& st, double peak_act_bytes, const CostParams& prm);

}  // namespace mplan
