// Event-driven pipeline simulation (see pipeline_sim.h).
#include "simulator/pipeline_sim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <queue>
#include <string>
#include <tuple>

#include "core/schedule.h"
#include "core/schedule_stages.h"
#include "simulator/comm_events.h"
#include "simulator/critical_path.h"

namespace mplan {

namespace {

constexpr double kUnset = -1.0;

// A (stage, chunk, micro-batch) array of times inside the simulation's buffer.
struct Grid3 {
  int vpp, m;
  double* v;
  double& at(int s, int c, int mb) const { return v[(size_t(s) * vpp + c) * m + mb]; }
};

struct Event {
  double t;
  long seq;
  int stage;
  bool operator>(const Event& o) const { return std::tie(t, seq) > std::tie(o.t, o.seq); }
};

std::string label(const Action& a) {
  return std::string(1, char(a.phase)) + " mb" + std::to_string(a.microbatch) + " c" + std::to_string(a.chunk);
}

// Adds an event to the DAG; its trace events run from `trace_first` to the trace's current end.
int record_event(StepGraph* graph, const std::vector<TraceEvent>* trace, StepEvent::Kind kind, int stage, int mb, int chunk,
                 double start, double dur, int trace_first) {
  return graph->add({kind, stage, mb, chunk, start, dur, PhaseCost{}, trace_first, trace ? int(trace->size()) : -1});
}

// The data-parallel tail of stage `s` after its last compute action (at sr.compute_end_s): the
// gradient buckets (released as the final backward passes of each chunk finish, when overlapped),
// the optimizer and the exposed parameter all-gather; their trace events and DAG events.
// last_b: per chunk the final backward's (start, end); last_node / last_b_node: their DAG events.
void stage_tail(const Workload& w, int s, bool overlap_grad, bool overlap_gather,
                const std::vector<std::pair<double, double>>& last_b, int last_node, const std::vector<int>& last_b_node,
                StageResult& sr, std::vector<TraceEvent>* trace, StepGraph* graph) {
  const StageWork& st = w.stages[s];
  const int vpp = int(st.chunks.size());
  double dp_free = 0;
  int prev_bucket = -1;  // DAG: the stage's last gradient bucket
  if (st.dp_grad_s > 0) {
    double total_b = 0;
    for (int c = 0; c < vpp; ++c) total_b += st.chunks[c].B.total() + st.chunks[c].W.total();
    for (int c = vpp - 1; c >= 0; --c) {
      double share = total_b > 0 ? (st.chunks[c].B.total() + st.chunks[c].W.total()) / total_b : 1.0 / vpp;
      double t_chunk = st.dp_grad_s * share;
      int k = std::max(1, int(std::lround(st.dp_buckets * share)));
      auto [b0, b1] = last_b[c];
      if (w.split_w) b1 = sr.compute_end_s;  // weight gradients complete with the deferred W passes
      for (int j = 0; j < k; ++j) {
        double ready = overlap_grad ? b0 + (b1 - b0) * double(j + 1) / k : sr.compute_end_s;
        double st0 = std::max(dp_free, ready);
        dp_free = st0 + t_chunk / k;
        if (graph) {  // after the previous bucket and the point of the backward that makes it ready
          int b =
              record_event(graph, trace, StepEvent::Kind::dp_grad, s, -1, c, st0, t_chunk / k, trace ? int(trace->size()) : -1);
          if (trace) graph->events.back().trace_end += 1;
          int from = overlap_grad && !w.split_w && last_b_node[c] >= 0 ? last_b_node[c] : last_node;
          const StepEvent& fe = graph->events[size_t(from)];
          graph->link(from, b, ready - (fe.start_s + fe.dur_s));
          graph->link(prev_bucket, b);
          prev_bucket = b;
        }
        if (trace) {  // exposed: what runs after the last backward
          trace->push_back({s, "dp", "DP grad reduce c" + std::to_string(c), st0, t_chunk / k, 'C', -1, c});
          trace->back().exposed_s = std::clamp(dp_free - std::max(st0, sr.compute_end_s), 0.0, t_chunk / k);
        }
      }
    }
  }
  double grad_exposed = std::max(0.0, dp_free - sr.compute_end_s);
  double gather_exposed = 0;
  if (st.dp_param_gather_s > 0) {
    if (overlap_gather) {
      // overlapped with the next step's first forward passes on this stage
      double window = 0;
      for (int c = 0; c < vpp; ++c) window += st.chunks[c].F.total();
      gather_exposed = std::max(st.dp_param_gather_s / st.dp_buckets, st.dp_param_gather_s - window);
    } else {
      gather_exposed = st.dp_param_gather_s;
    }
  }
  sr.dp_exposed_s = grad_exposed + gather_exposed;
  sr.optimizer_s = st.optimizer_s;
  sr.end_s = sr.compute_end_s + grad_exposed + st.optimizer_s + gather_exposed;
  const int opt_trace = trace ? int(trace->size()) : -1;
  if (graph) {  // the optimizer after the compute and the gradients, the exposed gather after it
    int o = record_event(graph, trace, StepEvent::Kind::optimizer, s, -1, -1, sr.compute_end_s + grad_exposed, st.optimizer_s,
                         opt_trace);
    if (trace) graph->events.back().trace_end = opt_trace + 1;
    graph->link(last_node, o);
    graph->link(prev_bucket, o);
    if (gather_exposed > 0) {
      double hidden = std::max(0.0, st.dp_param_gather_s - gather_exposed);
      int at = trace ? opt_trace + (hidden > 0 ? 2 : 1) : -1;
      int g = record_event(graph, trace, StepEvent::Kind::dp_gather, s, -1, -1, sr.compute_end_s + grad_exposed + st.optimizer_s,
                           gather_exposed, at);
      if (trace) graph->events.back().trace_end = at + 1;
      graph->link(o, g);
    }
  }
  if (trace) {
    trace->push_back({s, "compute", "optimizer", sr.compute_end_s + grad_exposed, st.optimizer_s, 'O', -1, -1});
    // the gather runs after the optimizer; the part the next step's first forwards hide is drawn
    // where they are, at the start of this step
    double hidden = std::max(0.0, st.dp_param_gather_s - gather_exposed);
    if (hidden > 0) trace->push_back({s, "dp", "DP param all-gather (hidden by the first forwards)", 0.0, hidden, 'C', -1, -1});
    if (gather_exposed > 0) {
      trace->push_back(
          {s, "dp", "DP param all-gather", sr.compute_end_s + grad_exposed + st.optimizer_s, gather_exposed, 'C', -1, -1});
      trace->back().exposed_s = gather_exposed;
    }
  }
}

// ScheduleTable::order: the stages run from a worklist, each as far as its inputs allow (the event
// simulation's readiness rules: a forward needs its input's forward on the previous stage, or on the
// last stage for the previous chunk; a backward its own forward and its gradient's backward on the
// next stage, or on the first stage for the next chunk; W its own B).
void build_order(ScheduleTable& t, int pp, int vpp, int m) {
  const size_t n = size_t(pp) * vpp * m, stride = size_t(vpp) * m;
  if (n > std::numeric_limits<uint32_t>::max() || pp > std::numeric_limits<uint16_t>::max())
    throw std::length_error("pipeline schedule too large to simulate: " + std::to_string(n) +
                            " (stage, chunk, micro-batch) slots");
  std::vector<char> f_done(n, 0), b_done(n, 0), queued(size_t(pp), 1);
  std::vector<int> b_seen(size_t(pp) * vpp, 0);  // backwards per (stage, chunk) so far
  size_t total = 0;
  for (const std::vector<Action>& l : t.actions) total += l.size();
  t.order.reserve(total);
  std::vector<size_t> pos(size_t(pp), 0);
  std::vector<int> work;
  for (int s = pp - 1; s >= 0; --s) work.push_back(s);
  auto wake = [&](int s) {
    if (!queued[size_t(s)]) queued[size_t(s)] = 1, work.push_back(s);
  };
  while (!work.empty()) {
    const int s = work.back();
    work.pop_back();
    queued[size_t(s)] = 0;
    const std::vector<Action>& list = t.actions[size_t(s)];
    for (size_t& i = pos[size_t(s)]; i < list.size(); ++i) {
      const Action& a = list[i];
      const size_t sl = (size_t(s) * vpp + a.chunk) * m + a.microbatch;
      const bool last = s == pp - 1 && a.chunk == vpp - 1;
      bool ok;
      if (a.phase == Phase::F)
        ok = (s == 0 && a.chunk == 0) || f_done[s > 0 ? sl - stride : (size_t(pp - 1) * vpp + a.chunk - 1) * m + a.microbatch];
      else if (a.phase == Phase::B)
        ok = f_done[sl] && (last || b_done[s < pp - 1 ? sl + stride : size_t(a.chunk + 1) * m + a.microbatch]);
      else
        ok = b_done[sl];
      if (!ok) break;
      const size_t sc = size_t(s) * vpp + a.chunk;
      const bool final_b = a.phase == Phase::B && ++b_seen[sc] == m;
      const uint8_t edge = uint8_t((s == 0 && a.chunk == 0 ? OrderStep::kFirstChunk : 0) | (last ? OrderStep::kLastChunk : 0) |
                                   (final_b ? OrderStep::kFinalBackward : 0));
      t.order.push_back({uint32_t(sl), uint32_t(sc), uint16_t(s), a.phase, edge});
      if (a.phase == Phase::F) {
        f_done[sl] = 1;
        if (!last) wake(s < pp - 1 ? s + 1 : 0);
      } else if (a.phase == Phase::B) {
        b_done[sl] = 1;
        if (s > 0 || a.chunk > 0) wake(s > 0 ? s - 1 : pp - 1);
      }
    }
  }
  for (int s = 0; s < pp && t.stuck_stage < 0; ++s)
    if (pos[size_t(s)] != t.actions[size_t(s)].size()) t.stuck_stage = s;
}

// The times and accumulators of one event simulation (buffers of simulate_pipeline).
struct SimState {
  Grid3 f_end, b_end, f_arr, b_arr;
  double *free_at, *link_fwd, *link_bwd, *act, *dur;
};

// What a stage's actions add up to in its list order whatever their times: the busy parts and the
// activation peak, with the event simulation's expressions in the same order (the same doubles).
void stage_sums(const std::vector<Action>& list, const std::vector<ChunkCost>& chunks, StageResult& sr) {
  PhaseCost busy = sr.busy;
  double act = 0, peak = sr.peak_act_bytes;
  for (const Action& a : list) {
    const ChunkCost& ch = chunks[size_t(a.chunk)];
    if (a.phase == Phase::F) {
      busy += ch.F;
      act += ch.act_bytes;
      peak = std::max(peak, act + ch.fwd_transient_bytes);
    } else if (a.phase == Phase::B) {
      busy += ch.B;
      peak = std::max(peak, act + ch.transient_bytes);
      act -= ch.act_bytes - ch.act_w_bytes;
    } else {
      busy += ch.W;
      act -= ch.act_w_bytes;
    }
    peak = std::max(peak, act);
  }
  sr.busy = busy;
  sr.peak_act_bytes = peak;
}

// The event simulation along the table's dependency order, for when nothing records the order of
// events (no trace, memory trace or DAG). Every value a stage computes depends only on its own list
// order and on the values its producers wrote (each written once, before it is read), so this gives
// the numbers of the (time, sequence) order bit for bit, with the same expressions. Each step carries
// its slots (OrderStep); when the producer finished is read only where the stage waited.
void run_in_order(const Workload& w, const ScheduleTable& table, int pp, int vpp, int m, const SimState& x, PipelineResult& res,
                  std::vector<std::vector<std::pair<double, double>>>& last_b) {
  if (table.stuck_stage >= 0)
    throw std::logic_error("pipeline schedule deadlocked at stage " + std::to_string(table.stuck_stage));
  for (int s = 0; s < pp; ++s) stage_sums(table.actions[size_t(s)], w.stages[size_t(s)].chunks, res.stages[size_t(s)]);
  // from a slot to the slot its output goes to: the next stage (the last stage: stage 0's next
  // chunk) for a forward, the previous one (stage 0: the last stage's previous chunk) for a backward
  const ptrdiff_t stride = ptrdiff_t(vpp) * m, wrap = ptrdiff_t(m) - ptrdiff_t(pp - 1) * stride;
  const unsigned last_stage = unsigned(pp - 1);
  const double p2p = w.p2p_s;
  for (const OrderStep& a : table.order) {
    const size_t sl = a.slot;
    const unsigned su = a.stage;
    double ready;
    const double* dur = x.dur + size_t(a.sc) * 3;
    double d;
    if (a.phase == Phase::F) {
      ready = a.edge & OrderStep::kFirstChunk ? 0.0 : x.f_arr.v[sl];
      d = dur[0];
    } else if (a.phase == Phase::B) {
      ready = x.f_end.v[sl];
      if (!(a.edge & OrderStep::kLastChunk)) ready = std::max(ready, x.b_arr.v[sl]);
      d = dur[1];
    } else {
      ready = x.b_end.v[sl];
      d = dur[2];
    }
    double& free_at = x.free_at[su];
    const double start = std::max(free_at, ready);
    const double gap = start - free_at;
    if (gap > 0) {
      double produced;  // when the input's producer finished
      if (a.phase == Phase::F)
        produced = a.edge & OrderStep::kFirstChunk ? 0.0 : x.f_end.v[ptrdiff_t(sl) + (su > 0 ? -stride : -wrap)];
      else if (a.phase == Phase::B)
        produced = a.edge & OrderStep::kLastChunk ? x.f_end.v[sl] : x.b_end.v[ptrdiff_t(sl) + (su < last_stage ? stride : wrap)];
      else
        produced = x.b_end.v[sl];
      StageResult& sr = res.stages[su];
      double p2p_wait = std::clamp(start - std::max(free_at, produced), 0.0, gap);
      sr.idle_p2p_s += p2p_wait;
      sr.idle_bubble_s += gap - p2p_wait;
    }
    const double end = start + d;
    free_at = end;
    if (a.phase == Phase::F) {
      x.f_end.v[sl] = end;
      if (!(a.edge & OrderStep::kLastChunk)) {
        const double arr = std::max(end, x.link_fwd[su]) + p2p;
        x.link_fwd[su] = arr;
        x.f_arr.v[ptrdiff_t(sl) + (su < last_stage ? stride : wrap)] = arr;
      }
    } else if (a.phase == Phase::B) {
      x.b_end.v[sl] = end;
      if (a.edge & OrderStep::kFinalBackward) last_b[su][a.sc - size_t(su) * vpp] = {start, end};
      if (!(a.edge & OrderStep::kFirstChunk)) {
        const double arr = std::max(end, x.link_bwd[su]) + p2p;
        x.link_bwd[su] = arr;
        x.b_arr.v[ptrdiff_t(sl) + (su > 0 ? -stride : -wrap)] = arr;
      }
    }
  }
}

}  // namespace

namespace {

// What a simulation reads of a table besides its lists.
void complete_table(ScheduleTable& t, int pp, int vpp, int microbatches) {
  t.max_in_flight.resize(size_t(pp));
  for (int st = 0; st < pp; ++st) t.max_in_flight[size_t(st)] = max_in_flight(t.actions[size_t(st)]);
  build_order(t, pp, vpp, microbatches);
}

}  // namespace

ScheduleTable make_schedule_table(Schedule s, int pp, int vpp, int microbatches) {
  ScheduleTable t;
  t.actions = schedule_all_stages(s, pp, vpp, microbatches);
  complete_table(t, pp, vpp, microbatches);
  return t;
}

SimCache::Table& SimCache::table(Schedule s, int pp, int vpp, int64_t microbatches) {
  auto key = std::make_tuple(int(s), pp, vpp, microbatches);
  {
    std::lock_guard<std::mutex> lock(sched_mu_);
    auto it = sched_.find(key);
    if (it != sched_.end()) return *it->second;
  }
  auto t = std::make_unique<Table>();
  t->t.actions = schedule_all_stages(s, pp, vpp, int(microbatches));
  std::lock_guard<std::mutex> lock(sched_mu_);
  return *sched_.emplace(key, std::move(t)).first->second;  // a table another thread made first wins
}

const ScheduleTable& SimCache::lists(Schedule s, int pp, int vpp, int64_t microbatches) {
  return table(s, pp, vpp, microbatches).t;
}

const ScheduleTable& SimCache::schedule(Schedule s, int pp, int vpp, int64_t microbatches) {
  Table& e = table(s, pp, vpp, microbatches);
  std::call_once(e.completed, [&] { complete_table(e.t, pp, vpp, int(microbatches)); });
  return e.t;
}

std::vector<double> SimCache::take_buffer() {
  std::lock_guard<std::mutex> lock(buf_mu_);
  if (free_.empty()) return {};
  std::vector<double> b = std::move(free_.back());
  free_.pop_back();
  return b;
}

void SimCache::give_buffer(std::vector<double>&& b) {
  std::lock_guard<std::mutex> lock(buf_mu_);
  free_.push_back(std::move(b));
}

PipelineResult simulate_pipeline(const Workload& w, const ParallelConfig& p, std::vector<TraceEvent>* trace,
                                 std::vector<MemoryCounter>* mem, StepGraph* graph, SimCache* cache) {
  const bool overlap_grad = p.overlap_grad_reduce && w.comm_overlap;
  const bool overlap_gather = p.overlap_param_gather && w.comm_overlap;
  const int pp = p.pp, vpp = p.vpp, m = w.microbatches;
  ScheduleTable own;
  if (!cache) own = make_schedule_table(p.schedule, pp, vpp, m);
  const ScheduleTable& table = cache ? cache->schedule(p.schedule, pp, vpp, m) : own;
  const std::vector<std::vector<Action>>& lists = table.actions;

  // four (stage, chunk, micro-batch) grids of times, unset until written, and per stage when it is
  // free, when its forward and backward links are free, and the activations it holds (buffers of the
  // cache when there is one; separate blocks: one large block is returned to the system and faulted
  // in again every simulation)
  // Without the (time, sequence) order the grids need no initial value: the dependency order reads
  // each entry after it is written.
  const bool ordered = trace || mem || graph;
  const size_t n = size_t(pp) * vpp * m;
  std::vector<double> bufs[5];
  for (std::vector<double>& b : bufs) {
    if (cache) b = cache->take_buffer();
    if (&b == &bufs[4])
      b.assign(4 * size_t(pp) + 3 * size_t(pp) * vpp, 0.0);
    else if (ordered)
      b.assign(n, kUnset);
    else if (b.size() < n)
      b.resize(n);
  }
  Grid3 f_end{vpp, m, bufs[0].data()}, b_end{vpp, m, bufs[1].data()}, f_arr{vpp, m, bufs[2].data()},
      b_arr{vpp, m, bufs[3].data()};
  double* const free_at = bufs[4].data();
  double* const link_fwd = free_at + pp;
  double* const link_bwd = link_fwd + pp;
  double* const act = link_bwd + pp;
  double* const dur = act + pp;  // [(stage * vpp + chunk) * 3 + F|B|W]: the action's duration
  for (int st = 0; st < pp; ++st)
    for (int c = 0; c < vpp; ++c) {
      const ChunkCost& ch = w.stages[size_t(st)].chunks[size_t(c)];
      double* d = dur + (size_t(st) * vpp + c) * 3;
      d[0] = ch.F.total(), d[1] = ch.B.total(), d[2] = ch.W.total();
    }
  std::vector<size_t> pos(pp, 0);
  PipelineResult res;
  res.stages.resize(pp);
  // final backward of each chunk on each stage: start, end (for the DP bucket overlap)
  std::vector<std::vector<std::pair<double, double>>> last_b(pp, std::vector<std::pair<double, double>>(vpp, {0, 0}));
  std::vector<int> b_count(size_t(pp) * vpp, 0);

  // timeline: the communication inside each action, and the sends waiting for their consumer's start
  std::optional<CommEvents> comm;
  if (trace) comm.emplace(w, p);
  std::vector<long> f_send, b_send;  // trace only
  if (trace) f_send.assign(size_t(pp) * vpp * m, -1), b_send.assign(size_t(pp) * vpp * m, -1);
  auto slot = [&](int st, int c, int mb) { return (size_t(st) * vpp + c) * m + mb; };
  // dependency DAG: the event of each action and transfer, the last one per stage and link
  std::vector<int> f_node, b_node, f_arr_node, b_arr_node, last_node(pp, -1), link_f_node(pp, -1), link_b_node(pp, -1);
  std::vector<std::vector<int>> last_b_node(pp, std::vector<int>(vpp, -1));
  if (graph) {
    graph->zero = p.zero;
    for (auto* v : {&f_node, &b_node, &f_arr_node, &b_arr_node}) v->assign(size_t(pp) * vpp * m, -1);
  }
  auto record = [&](StepEvent::Kind kind, int st, int mb, int c, double start, double dur, int trace_first) {
    return record_event(graph, trace, kind, st, mb, c, start, dur, trace_first);
  };

  // Which stage runs next. Every value a stage computes depends only on its own list order and on
  // its producers' values, so any order that respects the dependencies gives the same numbers; the
  // (time, sequence) queue is kept where the order is visible (trace, memory trace, DAG node ids),
  // and otherwise the table's dependency order runs (run_in_order: no queue, no readiness checks).
  if (!ordered) {
    run_in_order(w, table, pp, vpp, m, SimState{f_end, b_end, f_arr, b_arr, free_at, link_fwd, link_bwd, act, dur}, res, last_b);
    for (int s = 0; s < pp; ++s) pos[size_t(s)] = lists[size_t(s)].size();
  }
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> q;
  long seq = 0;
  if (ordered)
    for (int s = 0; s < pp; ++s) q.push({0.0, seq++, s});
  auto wake = [&](double t, int st) { q.push({t, seq++, st}); };
  auto next_stage = [&](int& st) {
    if (q.empty()) return false;
    st = q.top().stage;
    q.pop();
    return true;
  };

  const size_t stage_stride = size_t(vpp) * m;  // from a stage's slot to the next stage's
  for (int s = 0; next_stage(s);) {
    const std::vector<Action>& list = lists[size_t(s)];
    const std::vector<ChunkCost>& chunks = w.stages[size_t(s)].chunks;
    StageResult& sr = res.stages[size_t(s)];
    while (pos[s] < list.size()) {
      const Action& a = list[pos[s]];
      const ChunkCost& ch = chunks[size_t(a.chunk)];
      double ready = 0, produced = 0;  // arrival of the input, and when its producer finished
      bool ok = true;
      const size_t sl = (size_t(s) * vpp + a.chunk) * m + a.microbatch;  // this action's slot in the grids
      if (a.phase == Phase::F) {
        if (s > 0 || a.chunk > 0) {
          ready = f_arr.v[sl];
          ok = ready != kUnset;
          produced = ok ? (s > 0 ? f_end.v[sl - stage_stride] : f_end.at(pp - 1, a.chunk - 1, a.microbatch)) : 0;
        }
      } else if (a.phase == Phase::B) {
        ready = f_end.v[sl];
        ok = ready != kUnset;
        if (!ok) ready = 0;
        produced = ready;
        if (ok && (s < pp - 1 || a.chunk < vpp - 1)) {
          double arr = b_arr.v[sl];
          ok = arr != kUnset;
          if (ok) {
            produced = s < pp - 1 ? b_end.v[sl + stage_stride] : b_end.at(0, a.chunk + 1, a.microbatch);
            ready = std::max(ready, arr);
          }
        }
      } else {
        ok = b_end.v[sl] != kUnset;
        ready = produced = ok ? b_end.v[sl] : 0;
      }
      if (!ok) break;  // re-examined when the producer is scheduled
      double start = std::max(free_at[s], ready);
      double gap = start - free_at[s];
      if (gap > 0) {
        double p2p_wait = std::clamp(start - std::max(free_at[s], produced), 0.0, gap);
        sr.idle_p2p_s += p2p_wait;
        sr.idle_bubble_s += gap - p2p_wait;
        if (trace && p2p_wait > 0) {  // the exposed part of the pipeline transfer, on the receiving stage
          TraceEvent we{s, "p2p", "wait for recv " + label(a), start - p2p_wait, p2p_wait, 'C', a.microbatch, a.chunk};
          we.exposed_s = p2p_wait;
          trace->push_back(std::move(we));
        }
      }
      const PhaseCost& pc = a.phase == Phase::F ? ch.F : a.phase == Phase::B ? ch.B : ch.W;
      double end = start + dur[(size_t(s) * vpp + a.chunk) * 3 + (a.phase == Phase::F ? 0 : a.phase == Phase::B ? 1 : 2)];
      const int trace_at = trace ? int(trace->size()) : -1;
      sr.busy += pc;
      free_at[s] = end;
      // activation memory held between F and B/W
      if (a.phase == Phase::F) {
        act[s] += ch.act_bytes;
        sr.peak_act_bytes = std::max(sr.peak_act_bytes, act[s] + ch.fwd_transient_bytes);
      } else if (a.phase == Phase::B) {
        sr.peak_act_bytes = std::max(sr.peak_act_bytes, act[s] + ch.transient_bytes);
        act[s] -= ch.act_bytes - ch.act_w_bytes;
      } else {
        act[s] -= ch.act_w_bytes;
      }
      sr.peak_act_bytes = std::max(sr.peak_act_bytes, act[s]);
      if (mem) mem->push_back({s, end, act[s] / (1024.0 * 1024 * 1024)});
      if (trace) {
        trace->push_back({s, "compute", label(a), start, end - start, char(a.phase), a.microbatch, a.chunk});
        comm->emit(s, a, start, end, *trace);
        long sent = a.phase == Phase::F   ? f_send[slot(s, a.chunk, a.microbatch)]
                    : a.phase == Phase::B ? b_send[slot(s, a.chunk, a.microbatch)]
                                          : -1;
        if (sent >= 0) (*trace)[size_t(sent)].peer_start_s = start;  // the flow of that send ends here
      }
      int node = -1;
      if (graph) {  // the action, after the stage's previous one and its inputs
        const size_t sl = slot(s, a.chunk, a.microbatch);
        node = record(a.phase == Phase::F   ? StepEvent::Kind::forward
                      : a.phase == Phase::B ? StepEvent::Kind::backward
                                            : StepEvent::Kind::weight_grad,
                      s, a.microbatch, a.chunk, start, end - start, trace_at);
        graph->events.back().parts = pc;
        graph->link(last_node[s], node);
        if (a.phase == Phase::F) graph->link(f_arr_node[sl], node);
        if (a.phase == Phase::B) graph->link(f_node[sl], node), graph->link(b_arr_node[sl], node);
        if (a.phase == Phase::W) graph->link(b_node[sl], node);
        if (a.phase == Phase::F) f_node[sl] = node;
        if (a.phase == Phase::B) b_node[sl] = node;
        last_node[s] = node;
        if (a.phase == Phase::B && b_count[size_t(s) * vpp + a.chunk] + 1 == m) last_b_node[s][a.chunk] = node;
      }
      // a transfer to stage ns: after its producer and the link's previous transfer
      auto record_send = [&](std::vector<int>& link_node, std::vector<int>& arr_node, int ns, int nc, double depart) {
        if (!graph) return;
        int t = record(StepEvent::Kind::p2p, s, a.microbatch, a.chunk, depart, w.p2p_s, trace ? int(trace->size()) : -1);
        if (trace && w.p2p_s > 0) graph->events.back().trace_end += 1;  // the send event pushed next
        graph->link(node, t);
        graph->link(link_node[s], t);
        link_node[s] = t;
        arr_node[slot(ns, nc, a.microbatch)] = t;
      };
      // record completion and hand the tensor to the neighbour
      if (a.phase == Phase::F) {
        f_end.v[sl] = end;
        int ns = -1, nc = a.chunk;
        if (s < pp - 1)
          ns = s + 1;
        else if (a.chunk < vpp - 1)
          ns = 0, nc = a.chunk + 1;
        if (ns >= 0) {
          double depart = std::max(end, link_fwd[s]);
          double arr = depart + w.p2p_s;
          link_fwd[s] = arr;
          f_arr.at(ns, nc, a.microbatch) = arr;
          record_send(link_f_node, f_arr_node, ns, nc, depart);
          if (trace && w.p2p_s > 0) {
            f_send[slot(ns, nc, a.microbatch)] = long(trace->size());
            trace->push_back({s, "p2p", "send " + label(a), depart, w.p2p_s, 'C', a.microbatch, a.chunk});
            trace->back().peer_stage = ns;
          }
          wake(arr, ns);
        }
      } else if (a.phase == Phase::B) {
        b_end.v[sl] = end;
        if (++b_count[size_t(s) * vpp + a.chunk] == m) last_b[s][a.chunk] = {start, end};
        int ns = -1, nc = a.chunk;
        if (s > 0)
          ns = s - 1;
        else if (a.chunk > 0)
          ns = pp - 1, nc = a.chunk - 1;
        if (ns >= 0) {
          double depart = std::max(end, link_bwd[s]);
          double arr = depart + w.p2p_s;
          link_bwd[s] = arr;
          b_arr.at(ns, nc, a.microbatch) = arr;
          record_send(link_b_node, b_arr_node, ns, nc, depart);
          if (trace && w.p2p_s > 0) {
            b_send[slot(ns, nc, a.microbatch)] = long(trace->size());
            trace->push_back({s, "p2p", "send " + label(a), depart, w.p2p_s, 'C', a.microbatch, a.chunk});
            trace->back().peer_stage = ns;
          }
          wake(arr, ns);
        }
        if (w.split_w) wake(end, s);
      }
      ++pos[s];
    }
  }
  for (int s = 0; s < pp; ++s) {
    if (pos[s] != lists[s].size()) throw std::logic_error("pipeline schedule deadlocked at stage " + std::to_string(s));
  }

  // data-parallel gradient reduction, optimizer, parameter gather per stage
  for (int s = 0; s < pp; ++s) {
    StageResult& sr = res.stages[s];
    sr.compute_end_s = free_at[s];
    sr.max_in_flight = table.max_in_flight[size_t(s)];
    stage_tail(w, s, overlap_grad, overlap_gather, last_b[s], last_node[s], last_b_node[s], sr, trace, graph);
    if (sr.end_s > res.step_time_s) {
      res.step_time_s = sr.end_s;
      res.critical_stage = s;
    }
  }
  if (cache)
    for (std::vector<double>& b : bufs) cache->give_buffer(std::move(b));
  return res;
}

}  // namespace mplan
