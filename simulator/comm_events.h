// Communication events of the timeline, emitted while simulator/pipeline_sim.cpp runs the schedule:
// for each forward, backward and weight-gradient action one event per stream for the collectives
// the action's cost contains — TP all-gather / reduce-scatter / all-reduce, CP K/V exchange or
// all-to-all, EP dispatch and combine (with the ETP gathers), ZeRO-3 parameter all-gathers and
// gradient reduce-scatters — with the exposed part marked: TraceEvent::exposed_s is the action's
// exposed share of that stream (its PhaseCost), so on every stage the exposed parts sum to the time
// breakdown's exposed communication. An event's length is the collectives' whole time from the
// per-op tallies (forward and backward shares per op as simulator/workload.cpp costs them; the
// forward's collectives again for fully recomputed layers), at least its exposed part and at most
// the action. The event starts with its action. The pipeline's own transfers (sends, waits) and the
// data-parallel gradient reduction and parameter gather are emitted by pipeline_sim.cpp itself.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "core/parallel_config.h"
#include "core/schedule.h"
#include "simulator/simulator.h"
#include "simulator/workload.h"

namespace mplan {

class CommEvents {
 public:
  CommEvents(const Workload& w, const ParallelConfig& p);
  // Appends the communication events of action `a` of `stage`, which ran over [start_s, end_s].
  void emit(int stage, const Action& a, double start_s, double end_s, std::vector<TraceEvent>& out) const;

  struct Stream {
    std::string stream;  // tp | cp | ep | dp
    std::string what;    // "TP all-gather + reduce-scatter", "EP dispatch + combine" ...
    double total_s = 0, exposed_s = 0;
  };
  // The streams of one action of (stage, chunk) in phase F, B or W.
  const std::vector<Stream>& streams(int stage, int chunk, Phase phase) const;

 private:
  std::vector<std::vector<std::array<std::vector<Stream>, 3>>> table_;  // [stage][chunk][F, B, W]
};

}  // namespace mplan
