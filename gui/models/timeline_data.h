// The pipeline timeline as drawable data: lanes (one compute lane per stage, then one lane per
// communication stream used on that stage) holding the simulator's trace blocks sorted by start
// (communication blocks with their exposed part), the bubbles — idle gaps of each compute lane
// inside the pipelined part of the step — with their share of the step time and their cause
// (fill/drain of the schedule, or waiting for the bottleneck stage: stage imbalance), the per-stage
// idle split of the simulator (simulator/bubbles.h), and the flows of the pipeline transfers (send
// -> the action that consumes it). Plain C++ (no Qt): built and tested without a window.
#pragma once
#include <string>
#include <vector>

#include "simulator/simulator.h"

namespace mplan::gui {

struct TimelineBlock {
  double start_s = 0, dur_s = 0;
  char phase = 'F';  // F, B, W, 'O' optimizer, 'C' communication
  int microbatch = -1, chunk = -1;
  std::string name;       // the trace event's name ("F mb3 c0", "DP grad reduce c1", "send B mb2 c0")
  double exposed_s = 0;   // communication: its last exposed_s seconds hold up the compute stream
  bool critical = false;  // on the step's critical path (simulator/critical_path.h)
  double end_s() const { return start_s + dur_s; }
};

struct TimelineBubble {
  double start_s = 0, dur_s = 0;
  double share = 0;        // dur_s / step time
  bool imbalance = false;  // in the steady state of a stage that waits for the bottleneck, else fill/drain
};

// A pipeline transfer: from the end of a send (lane, time) to the start of the action that consumes
// it on the receiving stage's compute lane.
struct TimelineFlow {
  int from_lane = -1, to_lane = -1;
  double from_s = 0, to_s = 0;
};

struct TimelineLane {
  int stage = 0;
  std::string stream;                   // compute | tp | cp | ep | p2p | dp
  std::vector<TimelineBlock> blocks;    // sorted by start
  std::vector<TimelineBubble> bubbles;  // compute lanes only
  double busy_s = 0;
  bool isCompute() const { return stream == "compute"; }
};

struct TimelineData {
  std::vector<TimelineLane> lanes;
  int stages = 0;
  int microbatches = 0;
  double step_time_s = 0;
  double pipeline_end_s = 0;               // last forward/backward block of any stage
  std::vector<double> stage_bubble_share;  // per stage: sum of its bubbles / step time
  double bubble_fraction = 0;              // the simulator's (critical rank) bubble share
  double pp_wait_fraction = 0;             // the simulator's exposed PP p2p share (critical rank)
  // the simulator's split (simulator/bubbles.h): per stage, and of the critical rank
  std::vector<double> stage_fill_drain_share, stage_imbalance_share;
  double fill_drain_fraction = 0, imbalance_fraction = 0;
  int critical_stage = 0;
  int bottleneck_stage = -1;
  std::vector<int> stage_layers;
  std::vector<TimelineFlow> flows;
  int critical_blocks = 0;  // blocks on the critical path
  bool empty() const { return lanes.empty(); }
  int blockCount() const;
  // Index of the first lane of `stage` (its compute lane), -1 when absent.
  int computeLane(int stage) const;
};

// Gaps shorter than this fraction of the step are not drawn as bubbles (rounding noise).
constexpr double kMinBubbleShare = 1e-4;

TimelineData buildTimeline(const StepReport& r);

// Index of the block of `lane` covering time t (within `slack_s` of its edges), -1 for none.
// When several blocks are within the slack, the one whose span is closest to t wins.
int blockIndexAt(const TimelineLane& lane, double t, double slack_s);
// "16 layers + LM head and loss" of a stage (what it holds), "" when unknown.
std::string stageContents(const TimelineData& d, int stage);

// Index of the bubble of `lane` covering time t, -1 for none.
int bubbleIndexAt(const TimelineLane& lane, double t);

// "forward", "backward", "weight gradient", "optimizer", "communication".
const char* phaseName(char phase);

}  // namespace mplan::gui
