// The critical path of one simulated step. simulator/pipeline_sim.cpp records the step as a
// dependency DAG (StepGraph) while it runs the schedule: every forward, backward and weight-gradient
// action of every micro-batch and chunk on every stage (its duration holds the exposed part of the
// TP/CP/EP/FSDP collectives overlapped with it, PhaseCost), every pipeline transfer, every
// data-parallel gradient bucket, the optimizer step and the exposed parameter all-gather. An edge
// u -> v says v starts no earlier than u ends plus `lag` (0 for data and stream order; for a gradient
// bucket that becomes ready during a backward, the negative time from that point to the backward's
// end). Every event of the simulation starts as soon as its predecessors allow, so the longest path
// of the DAG (Boost.Graph, dag_shortest_paths with a max-plus order on the graph and on its reverse)
// equals the simulated step time, its events are the critical path, and an event's slack is how much
// longer it could take before the step does: L - (longest path to its start + longest path from it).
// Zeroing a zero-slack event's duration shortens the longest path; a positive-slack one does not
// (lags are kept as recorded: a what-if, not a re-simulation).
#pragma once
#include <string>
#include <vector>

#include "simulator/simulator.h"
#include "simulator/workload.h"

namespace mplan {

struct StepEvent {
  enum class Kind { forward, backward, weight_grad, p2p, dp_grad, optimizer, dp_gather };
  Kind kind = Kind::forward;
  int stage = 0, microbatch = -1, chunk = -1;
  double start_s = 0, dur_s = 0;
  PhaseCost parts;                       // forward/backward/weight-gradient actions: what the duration is made of
  int trace_first = -1, trace_end = -1;  // its events in StepReport::trace (when traced)
};

struct StepEdge {
  int from = 0, to = 0;
  double lag = 0;
};

struct StepGraph {
  std::vector<StepEvent> events;
  std::vector<StepEdge> edges;
  int zero = 1;  // the ZeRO level (names the gradient collective: all-reduce or reduce-scatter)
  int add(const StepEvent& e) {
    events.push_back(e);
    return int(events.size()) - 1;
  }
  void link(int from, int to, double lag = 0) {
    if (from >= 0) edges.push_back({from, to, lag});
  }
};

struct CriticalPathResult {
  double length_s = 0;                     // = the simulated step time
  std::vector<int> path;                   // event indices, in time order
  std::vector<double> earliest_s;          // per event: longest path to its start (= its simulated start)
  std::vector<double> slack_s;             // per event
  std::vector<CriticalKindShare> by_kind;  // the path's time by kind, largest first; shares sum to 1
};

// Longest path, slack and the grouping by kind. `zeroed`: an event whose duration counts as 0.
CriticalPathResult critical_path(const StepGraph& g, int zeroed = -1);

// "stage 3 backward 41%, pp p2p 6%, dp reduce-scatter tail 3%" — the first `max_kinds` kinds of
// StepReport::critical_by_kind with their shares (kinds under 0.5% left out; "" without a path).
std::string critical_path_summary(const StepReport& r, size_t max_kinds = 6);

// Kind of a critical event as reported ("forward", "backward", "weight gradient", "pp p2p",
// "dp reduce-scatter", "dp all-reduce", "optimizer", "dp param all-gather").
std::string event_kind_name(const StepEvent& e, int zero);

}  // namespace mplan
