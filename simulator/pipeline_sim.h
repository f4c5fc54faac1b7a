// Event-driven simulation of one training step of one pipeline (all data-parallel replicas, TP, CP
// and EP ranks are symmetric, so one pipeline stands for the whole job): the schedule tables of
// core/schedule.h executed with their cross-stage dependencies and point-to-point transfers, then the
// data-parallel gradient reduction (bucketed, overlapped with the last backward), the optimizer and
// the parameter all-gather. Events are ordered by (time, sequence) so equal times resolve the same way
// every run. It can record what it ran as the step's dependency DAG (simulator/critical_path.h).
#pragma once
#include <vector>

#include "core/parallel_config.h"
#include "simulator/simulator.h"
#include "simulator/workload.h"

namespace mplan {

struct StageResult {
  double compute_end_s = 0;  // last compute action ends
  double end_s = 0;          // + exposed DP, optimizer, param gather
  PhaseCost busy;            // sum of action parts
  double idle_p2p_s = 0;     // waiting for a transfer after its producer finished
  double idle_bubble_s = 0;  // waiting for the producer itself (pipeline bubble)
  double dp_exposed_s = 0;   // gradient reduction + parameter gather beyond the compute
  double optimizer_s = 0;
  double peak_act_bytes = 0;
  int max_in_flight = 0;
};

struct PipelineResult {
  std::vector<StageResult> stages;
  int critical_stage = 0;
  double step_time_s = 0;
};

struct StepGraph;

// The action lists of every stage of one schedule shape.
ScheduleTable make_schedule_table(Schedule s, int pp, int vpp, int microbatches);

// `trace`/`mem`/`graph` are filled when non-null (graph: the step's dependency DAG, critical_path.h);
// `cache` (optional) supplies the schedule tables and buffers.
PipelineResult simulate_pipeline(const Workload& w, const ParallelConfig& p, std::vector<TraceEvent>* trace,
                                 std::vector<MemoryCounter>* mem, StepGraph* graph = nullptr, SimCache* cache = nullptr);

}  // namespace mplan
