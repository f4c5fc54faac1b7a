// A frame: the part of a layout that fixes parameters per rank and the data-parallel groups (tp, pp,
// vpp, layer split, cp, dp, ep, etp) — everything but the micro-batch size and the variants. Per
// frame the planner computes once what every candidate in it shares:
//  - memory without activations per ZeRO level (simulator/memory.cpp's stage_memory);
//  - per stage and ZeRO level the gradient reduction, parameter all-gather and optimizer step, and
//    per chunk the ZeRO-3 (FSDP) parameter gathers and gradient scatters;
// and from those, for one candidate's chunk costs, what each stage must still do after its last
// backward: the last gradient bucket of chunk 0 (ready only when that backward ends), the optimizer
// step and the parameter all-gather the next step's first forwards cannot hide.
// The data-parallel terms are the simulator's own (simulator/dp_costs.h: buckets, ZeRO collectives,
// the optimizer step, FSDP traffic; simulator/layer_cost.h: exposed_comm_s); how the tails relax the
// simulation is relaxation R3/R4 of bounds.h.
#pragma once
#include <array>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/rank_grid.h"
#include "planner/bounds.h"
#include "planner/layer_costs.h"
#include "simulator/cost_params.h"

namespace mplan::planner {

struct Frame {
  Layout base;  // tp pp vpp pipe cp dp ep etp (mbs, variants and zero unset)
  int pipe_id = 0;
  std::array<double, 4> static_mem{};  // GiB per ZeRO level, no activations
  // Memory of stage s with a bytes of activations: mem_base[z][s] + mem_slope[z][s] * a (GiB;
  // simulator/memory.cpp's stage_memory is linear in the activations). The slopes when `slopes`.
  std::array<std::vector<double>, 4> mem_base, mem_slope;
  bool slopes = false;
  std::array<std::vector<double>, 4> opt;  // per ZeRO level, per stage, seconds
  // Data-parallel collectives (filled by FrameBuilder::add_collectives, when the frame is expanded).
  bool collectives = false;
  std::array<std::vector<double>, 4> grad, gather;  // per ZeRO level, per stage, seconds
  std::vector<int> buckets;                         // per stage
  std::vector<double> fsdp_ag, fsdp_rs;             // per chunk (ZeRO 3), seconds per micro-batch
};

class FrameBuilder {
 public:
  // `prm`: the job's cost parameters (the framework's efficiency is applied here, as the simulator does)
  FrameBuilder(const Job& job, const CostParams& prm, const Bounds& b);
  // Memory and optimizer terms (cheap: no group placement); without `slopes`, the memory without
  // activations only (add_slopes adds the rest: the search needs it for the structures it reaches).
  Frame build(const Layout& base, int pipe_id, const PipeShape& ps, const std::vector<int>& zeros, Bounds::MemScratch& ms,
              bool slopes = true) const;
  void add_slopes(Frame& f, const PipeShape& ps, const std::vector<int>& zeros, Bounds::MemScratch& ms) const;
  // The data-parallel collectives of the frame.
  void add_collectives(Frame& f, const PipeShape& ps, const std::vector<int>& zeros);

 private:
  const Job& job_;
  CostParams prm_;
  const Bounds& bounds_;
  // dp / expert-dp placements by (tp, cp, dp, pp, etp, ep)
  std::mutex mu_;
  std::map<std::tuple<int, int, int, int, int, int>, std::pair<GroupPlacement, GroupPlacement>> placements_;
};

// ZeRO-3: adds to each chunk's F and B the FSDP traffic its compute does not hide.
void add_fsdp(const Frame& f, const Layout& l, const PipeShape& ps, const CostParams& prm, std::vector<ChunkTotals>& ct);
// Per-stage time after the last backward (see above) for candidate `l` of frame `f`. Without
// `with_grad_bucket` the gradient bucket is left out (when `ct` only bounds the real chunk costs, the
// bucket's share of the gradient reduction is not known).
void stage_tails(const Frame& f, const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct,
                 std::vector<double>& out, bool with_grad_bucket = true);
// What stage_tails takes from the chunk costs, per stage (the same for every ZeRO level without FSDP
// traffic): chunk 0's share of the backward work and its buckets, its final backward, the first forwards.
struct TailParts {
  double share = 0, d0 = 0, window = 0;
  int k = 1, buckets = 1;
};
void tail_parts(const Frame& f, const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct,
                std::vector<TailParts>& out);
// stage_tails' value of stage `s` at ZeRO level `z` from its parts.
double stage_tail(const Frame& f, int z, int s, const TailParts& p, bool with_grad_bucket);
// Lower bound of the simulated step time of candidate `l` of frame `f` (chunk costs from the probes,
// FSDP traffic, stage tails, bounds.h's chain). Without `exact`, a selective-recompute candidate is
// bounded by its plain costs (its own probe is not needed). `ct`/`tail`: scratch; `ct_ready`: `ct`
// already holds the chunk totals the bound reads (`l`'s own with `exact`, else without selective
// recompute), which are reused.
double candidate_time_lb(const Bounds& b, const Frame& f, const Layout& l, const PipeShape& ps, LayerCostCache& costs,
                         const CostParams& prm, double p2p_s, bool exact, std::vector<ChunkTotals>& ct, std::vector<double>& tail,
                         bool ct_ready = false);
// Lower bound of the peak memory (GiB) of candidate `l`: its frame's memory with the activations each
// stage holds at its first backward (the frame's static memory for selective recompute, whose probe
// comes later). `ct`/`act`: scratch; `ct_ready`: `ct` already holds `l`'s chunk totals.
double candidate_memory_lb(const Bounds& b, const Frame& f, const Layout& l, const PipeShape& ps, LayerCostCache& costs,
                           std::vector<ChunkTotals>& ct, std::vector<double>& act, bool ct_ready = false);
// candidate_memory_lb and candidate_time_lb (without `exact`) at each ZeRO level, the same doubles, with
// what does not depend on the level (activations at the first backward, the chain's stage ends, the
// tails' chunk parts) computed once. One serves every variant with the same chunk totals without
// selective recompute: a selective variant shares them with the plain variant of its shape. Not
// thread-safe: one per thread.
class LevelBounds {
 public:
  // `plain`: the variant with selective recompute replaced by none (zero unset); `ct`: its chunk totals
  // (kept by reference).
  void reset(const Bounds& b, const Frame& f, const Layout& plain, const PipeShape& ps, const CostParams& prm, double p2p_s,
             const std::vector<ChunkTotals>& ct);
  // `selective`: the bounds of the selective variant (the frame's static memory; no gradient bucket).
  double memory_lb(int z, bool selective);
  double time_lb(int z, bool selective);

 private:
  const Bounds* b_ = nullptr;
  const Frame* f_ = nullptr;
  const PipeShape* ps_ = nullptr;
  const CostParams* prm_ = nullptr;
  const std::vector<ChunkTotals>* ct_ = nullptr;
  Layout l_;  // the plain variant
  bool have_act_ = false, have_chain_ = false, have_z3_ = false;
  double p2p_s_ = 0;
  std::vector<double> act_, ends_, ends_z3_;
  std::vector<TailParts> parts_, parts_z3_;
  std::vector<ChunkTotals> z3_;  // the chunk totals with ZeRO 3's FSDP traffic
};

// One pipeline transfer (activation tensor of one micro-batch), 0 when pp == 1.
double p2p_time(const Job& job, const CostParams& prm, const Layout& l);

}  // namespace mplan::planner
