// Cheap, sound bounds used to prune before full simulation.
//  - Pipeline shape: layers per (stage, chunk), MoE layers among them, parameters per stage.
//  - Chunk costs: the simulator's per-chunk forward/backward/weight-gradient times and activation
//    bytes, assembled from the probed per-layer costs (layer_costs.h).
//  - Step-time lower bound: on each stage the actions run one after another, the first forward of
//    micro-batch 0 cannot start before it has passed the earlier stages, and the last backward (of
//    micro-batch m-1, chunk 0) must still travel back to stage 0:
//      step >= max_s [ sum_{j<s} F_j0 + m * sum_c (F+B+W)_sc + sum_{j<s} B_j0 ] + optimizer overhead
//    (zero-bubble: the last B may precede deferred W passes, so the W terms leave the chain and the
//    busy time is bounded separately). With uniform stages this is (m+pp-1)(F+B), the known minimal
//    1F1B bubble. Each hop of the chain adds one point-to-point transfer, and each stage ends with
//    what cannot overlap its last backward: the last gradient bucket of chunk 0 (ready only when that
//    backward ends), the optimizer step and the parameter all-gather beyond the first forwards'
//    window (frame.h, stage_tails). Everything else (waiting for transfers, other buckets) counts as zero.
//  - Memory: weights, gradients and optimizer states per ZeRO level (simulator/memory.cpp's
//    stage_memory) with the activation peak from walking the schedule's action list exactly as the
//    event simulation accounts it (the peak depends on the order of actions, not their timing).
//
// RELAXATIONS — the one list of where a bound departs from the simulation (everything else is the
// simulator's own code: op and collective costs and the overlap rules of simulator/layer_cost.h, the
// data-parallel terms of simulator/dp_costs.h, build_workload itself on the probes, stage_memory):
//  R1 structure floor (floor.cpp): per layer type the minimum over the variants a structure contains
//     (sp/TP-comm overlap, CP exchange, zero-bubble split, moe_a2a_overlap on/off), with no
//     recomputation and no offloading transfers (both only add time), group placements of the
//     smallest grid with the shape (as the probes), and sequence parallel's smaller p2p transfer;
//     before that floor is computed, its cheap bound (structure_time_floor) orders the structures: the
//     busiest stage at the average stage's share of the floor's compute, the tail at the smallest
//     optimizer step;
//  R2 the chain: on each stage the actions are serial and micro-batch 0 passes the earlier stages
//     once; every other wait (transfers queued on a link, the schedule's own bubbles, imbalance
//     between stages) counts as zero;
//  R3 the data-parallel tail: only chunk 0's last gradient buckets (ready during its final backward,
//     with at most pp - s deferred W passes on a zero-bubble stage), the optimizer step and the
//     parameter all-gather beyond the first forwards' window; other buckets count as hidden. In the
//     floor chunk 0's bucket share is bounded below by its smallest backward over the largest of all;
//  R4 ZeRO-3: chunk compute g is a lower bound and g + exposed_comm_s(c, g) grows with g;
//  R5 selective recompute before its probe exists: the plain (none) costs and the frame's static
//     memory (recompute only adds time and never memory below it); search.cpp replaces the time bound
//     by the exact one (with the probe) before it would simulate the candidate;
//  R6 activation memory before simulating: what each stage holds at its first backward (closed forms
//     of the schedule tables), a subset of what it holds at its peak.
// tests/planner/test_bound_property.cpp checks every bound against simulate() on >= 10,000 random
// layouts; docs/planner.md states the same list.
#pragma once
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/counting.h"
#include "core/plan.h"
#include "core/schedule.h"
#include "planner/constraints.h"
#include "planner/layer_costs.h"
#include "simulator/cost_params.h"
#include "simulator/simulator.h"
#include "simulator/workload.h"

namespace mplan::planner {

struct PipeShape {
  int pp = 1, vpp = 1;
  PipeLayout pipe = PipeLayout::even;
  std::vector<int> layers, first;  // [stage * vpp + chunk]
  int min_chunk = 0;
  std::vector<StageParams> params;  // per stage, not divided by TP/EP
  // per stage: its dense and MoE layers, and those of its chunk 0 (structure_time_floor)
  std::vector<std::array<int, 4>> stage_counts;
  // [stage * vpp + chunk]: an earlier chunk (neither the first nor the last: no embedding, no head)
  // with the same layers and the same MoE layers among them, whose chunk totals it copies; -1: none.
  // `computed`: the chunks with none, in order; `copies`: (chunk, its same_as) for the others.
  std::vector<int> same_as, computed;
  std::vector<std::pair<int, int>> copies;
};
// `first`/`last`: the first/last stage's layers when pipe == first_last.
PipeShape make_pipe_shape(const ModelSpec& m, int pp, int vpp, PipeLayout pipe, int first = 0, int last = 0);

// Per-chunk totals of one layout.
struct ChunkTotals {
  double F = 0, B = 0, W = 0;                                   // seconds per micro-batch
  double act = 0, act_w = 0, transient = 0, fwd_transient = 0;  // bytes
};

// The action lists of one schedule shape (all stages).
using ScheduleInfo = ScheduleTable;

// Forwards of each chunk that precede the first backward of `stage`, and that backward's chunk
// (closed forms of core/schedule.cpp's warm-up phases; tests/planner compares them with the lists).
void forwards_before_first_backward(Schedule s, int pp, int vpp, int64_t microbatches, int stage, std::vector<int64_t>& per_chunk,
                                    int& first_b_chunk);

// A stretch [begin, end) of an action list in which every action has the (phase, chunk) of the action
// `period` places earlier (the steady state of 1F1B, interleaved and ZB-H1 tables); period 0: none.
struct WalkPeriod {
  int64_t begin = 0, end = 0, period = 0;
};
WalkPeriod walk_period(const std::vector<Action>& actions);
// The activation peak of one stage's action list (chunk totals `ct` by chunk), exactly as the event
// simulation accounts it; `wp`: the list's walk_period, whose repeated periods are skipped once the
// walk is back where the previous one began ({}: every action is walked). The same double either way.
double stage_peak_activations(const std::vector<Action>& actions, const ChunkTotals* ct, const WalkPeriod& wp);

class Bounds {
 public:
  // `shared`: a simulation cache of the same job (any GPU count) to use instead of an own one.
  Bounds(const Job& job, const CostParams& prm, SimCache* shared = nullptr);
  // Chunk totals of `l` (its recompute, schedule and shape) on `ps`.
  void chunk_totals(const Layout& l, const PipeShape& ps, const ShapeCosts& sc, std::vector<ChunkTotals>& out) const;
  // Lower bound of the simulated step time, seconds. `tail[s]`: time stage s needs after its last
  // backward (frame.h, stage_tails; empty = none); `p2p_s`: one pipeline transfer.
  double step_time_lb(const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct, const std::vector<double>& tail,
                      double p2p_s) const;
  // The chain's part of it: per stage, when its compute can end at the earliest (step_time_lb is the
  // largest end + tail).
  void compute_ends(const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct, double p2p_s,
                    std::vector<double>& end) const;
  // Peak activation bytes per stage, exactly as the event simulation accounts them.
  void peak_activations(const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct,
                        std::vector<double>& peak) const;
  // The same, walking stage s only until its running peak passes budget[s] and `over(s, peak so far)`
  // says the stage cannot fit (a check that must grow with the peak, such as stage_memory_gib): returns
  // that stage (`peak` is then incomplete), or -1 when every stage was walked (`peak` complete).
  int peak_activations_until(const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct,
                             const std::vector<double>& budget, const std::function<bool(int, double)>& over,
                             std::vector<double>& peak) const;
  // A lower bound of the same: what is held when each stage starts its first backward.
  void activations_at_first_backward(const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct,
                                     std::vector<double>& out) const;
  // Cached action lists (thread-safe; without the dependency order and max_in_flight, SimCache::lists).
  const ScheduleInfo& schedule(Schedule s, int pp, int vpp, int64_t microbatches) const {
    return cache_->lists(s, pp, vpp, microbatches);
  }
  // The job's simulation cache (schedule tables, op-list costs, buffers), shared with simulate().
  SimCache& sim_cache() const { return *cache_; }
  // Scratch of one thread for peak_memory_gib (a plan copy whose layout fields are overwritten).
  struct MemScratch {
    Plan plan;
    StageWork st;
  };
  MemScratch scratch() const;
  // Memory (GiB) of stage `s` of `l` holding `act_bytes` of activations at its peak.
  double stage_memory_gib(const Layout& l, const PipeShape& ps, int s, double act_bytes, MemScratch& sc) const;
  // stage_memory_gib of every stage of `base` at each ZeRO level of `zeros` with no activations
  // (at_zero[z][s]); with `at_act`, instead that of `act_bytes` of them (at_act[z][s]; at_zero untouched).
  void stage_memory_lines(const Layout& base, const PipeShape& ps, const std::vector<int>& zeros, double act_bytes,
                          MemScratch& sc, std::array<std::vector<double>, 4>& at_zero,
                          std::array<std::vector<double>, 4>* at_act = nullptr) const;
  // Peak memory (GiB, max over stages) for `l` with per-stage activation peaks (empty = none);
  // `worst` receives the breakdown of the worst stage and its index when non-null.
  double peak_memory_gib(const Layout& l, const PipeShape& ps, const std::vector<double>& act_peak, MemScratch& s,
                         MemoryBreakdown* worst = nullptr, int* worst_stage = nullptr) const;
  int64_t microbatches(const Layout& l) const { return job_.gbs() / (int64_t(l.mbs) * l.dp); }
  // Where a stage's action list repeats itself (walk_period): the walks skip whole periods once the
  // activations held at the start of one equal those at the start of the previous one.
  const std::vector<WalkPeriod>& walk_periods(const ScheduleInfo& si) const;
  const Job& job() const { return job_; }
  const std::vector<int>& moe_prefix() const { return moe_prefix_; }

 private:
  const Job& job_;
  CostParams prm_;
  std::vector<int> moe_prefix_;          // MoE layers among the first i layers
  std::unique_ptr<SimCache> own_cache_;  // when none is shared
  SimCache* cache_;
  bool mtp_moe_ = false;
  mutable std::mutex period_mu_;
  mutable std::map<const ScheduleInfo*, std::unique_ptr<std::vector<WalkPeriod>>> periods_;  // per table, per stage
  ParamCounts counts_;  // the model's parameter counts (for fill_stage_params)
};

}  // namespace mplan::planner
