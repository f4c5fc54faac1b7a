// The pipeline timeline as drawable data (see timeline_data.h).
#include "gui/models/timeline_data.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace mplan::gui {

namespace {

int streamOrder(const std::string& s) {
  static const char* order[] = {"compute", "tp", "cp", "ep", "p2p", "dp"};
  for (int i = 0; i < 6; ++i)
    if (s == order[i]) return i;
  return 6;
}

bool isPipelineWork(char phase) { return phase == 'F' || phase == 'B' || phase == 'W'; }

}  // namespace

const char* phaseName(char phase) {
  switch (phase) {
    case 'F':
      return "forward";
    case 'B':
      return "backward";
    case 'W':
      return "weight gradient";
    case 'O':
      return "optimizer";
    default:
      return "communication";
  }
}

int TimelineData::blockCount() const {
  int n = 0;
  for (const auto& l : lanes) n += int(l.blocks.size());
  return n;
}

int TimelineData::computeLane(int stage) const {
  for (size_t i = 0; i < lanes.size(); ++i)
    if (lanes[i].stage == stage && lanes[i].isCompute()) return int(i);
  return -1;
}

TimelineData buildTimeline(const StepReport& r) {
  TimelineData d;
  d.step_time_s = r.step_time_s;
  d.microbatches = r.num_microbatches;
  d.bubble_fraction = r.bubble_fraction;
  d.pp_wait_fraction = r.step_time_s > 0 ? r.time.pp_p2p_exposed / r.step_time_s : 0.0;
  d.critical_stage = r.critical_stage;
  d.bottleneck_stage = r.bottleneck_stage;
  if (r.step_time_s > 0) {
    d.fill_drain_fraction = r.bubble_fill_drain_s / r.step_time_s;
    d.imbalance_fraction = r.bubble_imbalance_s / r.step_time_s;
    for (const auto& s : r.per_stage) {
      d.stage_fill_drain_share.push_back(s.idle_fill_drain_s / r.step_time_s);
      d.stage_imbalance_share.push_back(s.idle_imbalance_s / r.step_time_s);
      d.stage_layers.push_back(s.layers);
    }
  }
  int stages = int(r.per_stage.size());
  for (const auto& e : r.trace) stages = std::max(stages, e.stage + 1);
  d.stages = stages;
  if (r.trace.empty()) return d;

  // (stage, stream order, stream) -> lane
  std::map<std::tuple<int, int, std::string>, TimelineLane> by_key;
  for (int s = 0; s < stages; ++s) by_key[{s, 0, "compute"}] = TimelineLane{s, "compute", {}, {}, 0};
  for (const auto& e : r.trace) {
    auto& lane = by_key[{e.stage, streamOrder(e.stream), e.stream}];
    lane.stage = e.stage;
    lane.stream = e.stream;
    lane.blocks.push_back({e.start_s, e.dur_s, e.phase, e.microbatch, e.chunk, e.name, e.exposed_s, e.critical});
    d.critical_blocks += e.critical ? 1 : 0;
    lane.busy_s += e.dur_s;
    if (isPipelineWork(e.phase)) d.pipeline_end_s = std::max(d.pipeline_end_s, e.start_s + e.dur_s);
  }
  double step = d.step_time_s > 0 ? d.step_time_s : d.pipeline_end_s;
  d.stage_bubble_share.assign(stages, 0.0);
  // the steady state of each stage: from its first backward to the end of its last forward; idle
  // there is waiting for a slower stage when the simulator finds imbalance on this stage
  std::vector<double> first_b(size_t(stages), 1e300), last_f(size_t(stages), -1.0);
  for (const auto& e : r.trace)
    if (e.stream == "compute") {
      if (e.phase == 'B') first_b[size_t(e.stage)] = std::min(first_b[size_t(e.stage)], e.start_s);
      if (e.phase == 'F') last_f[size_t(e.stage)] = std::max(last_f[size_t(e.stage)], e.start_s + e.dur_s);
    }
  for (auto& entry : by_key) {
    TimelineLane& lane = entry.second;  // a named reference: clang before 16 cannot capture a structured binding
    std::stable_sort(lane.blocks.begin(), lane.blocks.end(),
                     [](const TimelineBlock& a, const TimelineBlock& b) { return a.start_s < b.start_s; });
    if (lane.isCompute() && step > 0) {
      double cursor = 0;
      auto addGap = [&](double from, double to) {
        double dur = to - from;
        if (dur / step < kMinBubbleShare) return;
        const size_t s = size_t(lane.stage);
        bool waits = s < d.stage_imbalance_share.size() && d.stage_imbalance_share[s] > 0;
        bool steady = from >= first_b[s] - 1e-12 && to <= last_f[s] + 1e-12;
        lane.bubbles.push_back({from, dur, dur / step, waits && steady});
        d.stage_bubble_share[lane.stage] += dur / step;
      };
      for (const auto& b : lane.blocks) {
        if (b.start_s >= d.pipeline_end_s) break;
        if (b.start_s > cursor) addGap(cursor, b.start_s);
        cursor = std::max(cursor, b.end_s());
      }
      if (cursor < d.pipeline_end_s) addGap(cursor, d.pipeline_end_s);
    }
    d.lanes.push_back(std::move(lane));
  }
  // flows: each send to the action that consumes it
  std::map<std::pair<int, std::string>, int> lane_of;
  for (size_t i = 0; i < d.lanes.size(); ++i) lane_of[{d.lanes[i].stage, d.lanes[i].stream}] = int(i);
  for (const auto& e : r.trace) {
    if (e.peer_stage < 0) continue;
    auto from = lane_of.find({e.stage, e.stream});
    int to = d.computeLane(e.peer_stage);
    if (from == lane_of.end() || to < 0) continue;
    d.flows.push_back({from->second, to, e.start_s + e.dur_s, std::max(e.peer_start_s, e.start_s + e.dur_s)});
  }
  std::sort(d.flows.begin(), d.flows.end(), [](const TimelineFlow& a, const TimelineFlow& b) { return a.from_s < b.from_s; });
  return d;
}

std::string stageContents(const TimelineData& d, int stage) {
  if (stage < 0 || size_t(stage) >= d.stage_layers.size()) return {};
  std::string s = std::to_string(d.stage_layers[size_t(stage)]) + " layers";
  if (stage == 0) s = "embedding + " + s;
  if (stage == int(d.stage_layers.size()) - 1) s += " + LM head and loss";
  return s;
}

int blockIndexAt(const TimelineLane& lane, double t, double slack_s) {
  const auto& bl = lane.blocks;
  // blocks are sorted by start: look at the ones starting before t + slack
  auto it = std::upper_bound(bl.begin(), bl.end(), t + slack_s, [](double v, const TimelineBlock& b) { return v < b.start_s; });
  int best = -1;
  double best_dist = slack_s;
  // walk back; blocks on one lane do not overlap much, so a few steps suffice, but long blocks
  // (optimizer, DP reduce) may start far earlier: stop once a block ends well before t - slack
  int steps = 0;
  while (it != bl.begin()) {
    --it;
    double dist = t < it->start_s ? it->start_s - t : (t > it->end_s() ? t - it->end_s() : 0.0);
    if (dist <= best_dist) {
      if (best < 0 || dist < best_dist) best = int(it - bl.begin());
      best_dist = dist;
      if (dist == 0) break;
    }
    if (++steps > 64 && it->end_s() < t - slack_s) break;
  }
  return best;
}

int bubbleIndexAt(const TimelineLane& lane, double t) {
  for (size_t i = 0; i < lane.bubbles.size(); ++i) {
    const auto& b = lane.bubbles[i];
    if (t >= b.start_s && t <= b.start_s + b.dur_s) return int(i);
  }
  return -1;
}

}  // namespace mplan::gui
