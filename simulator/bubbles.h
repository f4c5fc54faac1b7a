// The pipeline bubble by cause. Inside the pipelined part of the step a stage waits for three
// reasons: a transfer (p2p), the schedule's fill and drain (the warm-up before the first backward and
// the cool-down after the last forward: (pp-1)/(m+pp-1) of a balanced 1F1B pipeline), and stage
// imbalance — the stage with the most work per micro-batch (the bottleneck: often the last, with
// the LM head and the loss) sets the pace of the steady state, and every other stage waits m times
// the difference. split_bubbles() attributes each stage's schedule idle (transfers already apart):
//   imbalance = min(idle, m * (work of the bottleneck - own work)),  fill/drain = idle - imbalance,
// so the bottleneck's idle is all fill/drain, and a pipeline of equal stages has no imbalance.
#pragma once
#include <string>
#include <vector>

#include "core/plan.h"
#include "simulator/pipeline_sim.h"
#include "simulator/simulator.h"
#include "simulator/workload.h"

namespace mplan {

// Fills StageReport::work_per_microbatch_s / idle_* of r.per_stage (built already) and
// StepReport::critical_stage, bottleneck_stage, bubble_fill_drain_s, bubble_imbalance_s.
void split_bubbles(const Workload& w, const PipelineResult& pr, StepReport& r);

// What a stage holds, for messages: "embedding + 15 layers", "16 layers + LM head and loss".
std::string stage_contents(const Plan& plan, const StepReport& r, int stage);

// Warnings worded by cause: fill/drain ("more micro-batches or interleaving shrink it") and stage
// imbalance (naming the bottleneck stage, what it holds and how much more work it does).
std::vector<std::string> bubble_warnings(const Plan& plan, const StepReport& r);

}  // namespace mplan
