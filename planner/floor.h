// The probe-free lower bound of a whole structure (first level of the search). Per layer type, the
// cost of a layer without recomputation is the simulator's own per-list timing
// (simulator/layer_cost.h: time_op_list, the same function build_workload calls) for every variant a
// structure contains (sequence parallel on/off, TP-comm overlap, CP exchange, zero-bubble split, MoE
// all-to-all overlap); the structure's bound takes the minimum over them (relaxation R1 of bounds.h).
// A structure whose bound is already worse than the K-th best result is never expanded — for big
// spaces that is most of them, and no probe (layer_costs.h) or per-candidate bound is computed for them.
#pragma once
#include <map>
#include <mutex>
#include <tuple>

#include "core/plan.h"
#include "planner/bounds.h"
#include "planner/frame.h"
#include "simulator/cost_params.h"
#include "simulator/layer_cost.h"

namespace mplan::planner {

// Lower bounds of one piece's times per micro-batch: forward, backward (the part on the chain of
// backwards: without the weight gradient when split), forward+backward+weight gradient, and
// forward+backward.
struct FloorPiece {
  double F = 0, B = 0, T = 0, FB = 0;
  // Upper bounds over the variants: backward + weight gradient, and the weight gradient alone
  // (they bound how long the final backward of a micro-batch can take, see frame.h).
  double BWmax = 0, Wmax = 0;
  double BWmin = 0;  // the smallest backward + weight gradient (a lower bound of a chunk's share of them)
};
struct ShapeFloor {
  FloorPiece dense, moe, emb, head;
};

class FloorCache {
 public:
  // `prm`: the job's cost parameters (the framework's efficiency is applied here, as the simulator does)
  // `share_dense`: shapes that differ only in ep / etp share the dense layer, embedding and head pieces
  // (see compute); false computes every shape on its own (tests compare the two).
  FloorCache(const Job& job, const CostParams& prm, bool share_dense = true);
  // Floor of the shape (tp, cp, ep, etp, mbs), minimum over the variants allowed for it.
  const ShapeFloor& get(int tp, int cp, int ep, int etp, int mbs);

 private:
  ShapeFloor compute(int tp, int cp, int ep, int etp, int mbs) const;
  // The minimum over the variants of the shape, into `out`; the dense layer, embedding and head
  // pieces only with `dense`.
  void min_over_variants(int tp, int cp, int ep, int etp, int mbs, ListTimingContext& v, bool dense, ShapeFloor& out) const;
  // tp, cp, micro-batch and the tp and cp placements (size, domains, most per domain, uniform)
  using DenseKey = std::tuple<int, int, int, int, int, int, bool, int, int, int, bool>;
  const Job& job_;
  CostParams prm_;
  bool share_dense_ = true;
  mutable std::mutex dense_mu_;
  mutable std::map<DenseKey, ShapeFloor> dense_;  // the dense, emb and head pieces by DenseKey
  std::mutex mu_;
  std::map<std::tuple<int, int, int, int, int>, ShapeFloor> cache_;
};

// Lower bound of the step time of any candidate of a structure (frame `f` + micro-batch size).
double structure_time_lb(const Job& job, const PipeShape& ps, const Frame& f, const std::vector<int>& zeros, const ShapeFloor& fl,
                         int64_t microbatches, double p2p_s, const std::vector<int>& moe_prefix, const CostParams& prm);
// A cheap lower bound of structure_time_lb (O(pp): PipeShape::stage_counts, no collectives:
// `f` needs only FrameBuilder::build): the chain of structure_time_lb with whole stages instead of
// chunks, without the point-to-point transfers and with each stage's tail at its smallest optimizer
// step of the levels `zeros` — every stage computes all micro-batches after micro-batch 0 reached it,
// and stage 0's last backward follows the last stage's forwards and backwards. The search orders the
// structures by it and computes structure_time_lb only for those it reaches (structure_queue.h).
double structure_time_floor(const Job& job, const PipeShape& ps, const Frame& f, const std::vector<int>& zeros,
                            const ShapeFloor& fl, int64_t microbatches);

}  // namespace mplan::planner
