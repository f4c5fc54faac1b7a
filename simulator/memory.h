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

// What stage_memory reads of a StageWork (model_state_bytes: the parameters on the rank, their
// unquantized part, the largest layer). Two stages of one plan whose inputs are equal (bit for bit)
// have the same memory for the same activation bytes; the planner's memory lines cost such stages once.
struct StageMemoryInputs {
  double dense = 0, expert = 0, unquantized = 0, layer = 0;
  bool operator==(const StageMemoryInputs& o) const;
};
StageMemoryInputs stage_memory_inputs(const StageWork& st);

}  // namespace mplan
