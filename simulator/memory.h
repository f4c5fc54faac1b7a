// Per-rank memory of a pipeline stage: model states by framework, precision and ZeRO level
// (memory_states.h), peak activations from the simulated schedule, NCCL buffers, workspaces, allocator
// slack and the CUDA context (memory.cpp documents each constant).
#pragma once
#include "core/plan.h"
#include "simulator/cost_params.h"
#include "simulator/simulator.h"
#include "simulator/workload.h"

namespace mplan {

MemoryBreakdown stage_memory(const Plan& plan, const StageWork& st, double peak_act_bytes, const CostParams& prm);

}  // namespace mplan
