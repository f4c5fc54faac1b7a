// Per-layer action costs measured with the simulator itself. A chunk's forward/backward cost in the
// simulator's workload is the sum of its layers' costs (plus the embedding on the first chunk and the
// head on the last), and a layer's cost depends only on the per-rank shape of the layout (tp, sp,
// tp-comm overlap, cp and its exchange, ep, etp, micro-batch, zero-bubble split) — not on pp, vpp,
// dp or ZeRO. So the planner builds tiny "probe" plans (three or four pipeline stages of one or two
// layers) with build_workload() once per shape and reads each layer type's costs off the stages:
// probe F (full recompute of 1 layer per chunk): stages [E+R][R][R+N][R+H]
// probe S (selective recompute):                 stages [E+S][S][S+H]
// (E embedding, H head + loss, N plain layer, R fully recomputed layer, S selectively recomputed).
// These are exact copies of what simulate() would charge, up to floating-point rounding.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/plan.h"
#include "planner/layout.h"
#include "planner/worker_pool.h"
#include "simulator/cost_params.h"
#include "simulator/workload.h"

namespace mplan::planner {

// One piece of a chunk: time per micro-batch by phase (all parts summed) and the activation memory
// it keeps.
struct PieceCost {
  double F = 0, B = 0, W = 0;
  double act = 0, act_w = 0;
  // working memory beyond the kept activations in the backward / forward of one such piece (a max
  // over the pieces of a chunk, not a sum: Workload's ListMemory)
  double transient = 0, fwd_transient = 0;
};

// Per-layer costs of one layer type (dense MLP or MoE) in each recompute mode.
struct TypeCosts {
  PieceCost none, full, selective;  // full: the recomputed layer (transient = its saved bytes)
};

struct ShapeCosts {
  TypeCosts dense, moe;
  PieceCost emb, head, emb_sel, head_sel;  // embedding / head in plain and selective mode
  bool has_selective = false;              // the selective-recompute parts are filled
};

// The shape of a layout that per-layer costs depend on.
struct ShapeKey {
  int tp, cp, ep, etp, mbs;
  uint8_t sp, overlap, cp_comm, split_w;
  uint32_t rmods, offload;  // selective recompute modules, offloaded modules
  uint8_t a2a;              // moe_a2a_overlap
  auto tie() const { return std::tie(tp, cp, ep, etp, mbs, sp, overlap, cp_comm, split_w, rmods, offload, a2a); }
  bool operator<(const ShapeKey& o) const { return tie() < o.tie(); }
};
ShapeKey shape_of(const Layout& l);

// Cache of probe results for one job; thread-safe.
class LayerCostCache {
 public:
  // `share_probes`: shapes whose probe plans are equal share the probe (the same plan, the same
  // doubles): a MoE model's dense-layer probes read neither ep, etp nor the all-to-all overlap
  // (probe_plan sets them to 1 / off), the full-recompute probe reads no selective modules, and the
  // all-to-all overlap's delta (layer_timing) neither those nor the offloaded modules. false
  // probes each shape on its own (tests compare the two).
  LayerCostCache(const Plan& job, const CostParams& prm, bool share_probes = true);
  // Costs for the shape, computed on first use; the selective-recompute parts only when asked
  // (they need a second probe per layer type).
  const ShapeCosts& get(const ShapeKey& k, bool selective = false);
  // Computes many shapes (without their selective parts) on worker threads.
  void prefill(const std::vector<ShapeKey>& keys, int threads);
  // The same on the threads of `pool`.
  void prefill(const std::vector<ShapeKey>& keys, WorkerPool& pool);
  int64_t probes() const { return probes_; }

 private:
  ShapeCosts compute(const ShapeKey& k) const;
  // prefill() with `loop(n, fn)` running fn(begin, end) over [0, n) on some threads.
  using Loop = std::function<void(size_t, const std::function<void(size_t, size_t)>&)>;
  void prefill_with(const std::vector<ShapeKey>& keys, const Loop& loop);
  // The cached entry of `k` when it holds what is asked (else nullptr); `entry`: the entry when cached.
  const ShapeCosts* find_ready(const ShapeKey& k, bool selective, ShapeCosts*& entry);
  // moe_a2a_overlap changes only the MoE layers' forward and backward times (not their memory, nor
  // the dense layers, embedding or head): such a shape costs what the same shape without it costs
  // plus the difference of one MoE layer's timing (simulator's layer_timing) — no probe.
  const ShapeCosts& get_a2a(const ShapeKey& k, bool selective);
  void add_a2a_delta(const ShapeKey& k, ShapeCosts& sc) const;
  void compute_selective(const ShapeKey& k, ShapeCosts& sc) const;
  // The dense-layer probes of a MoE model by dense_key (see the constructor).
  static ShapeKey dense_key(const ShapeKey& k);
  bool find_dense(const ShapeKey& k, bool full_mode, TypeCosts& tc) const;
  void keep_dense(const ShapeKey& k, bool full_mode, const TypeCosts& tc) const;
  struct DenseProbe {
    TypeCosts costs;
    bool has_full = false, has_selective = false;
  };
  const Plan& job_;
  CostParams prm_;
  bool share_ = true;
  mutable std::mutex dense_mu_;
  mutable std::map<ShapeKey, DenseProbe> dense_;
  mutable std::map<ShapeKey, std::array<double, 3>> a2a_delta_;  // add_a2a_delta's F, B, W (rmods, offload 0)
  std::mutex mu_;
  std::map<ShapeKey, std::unique_ptr<ShapeCosts>> cache_;
  int64_t probes_ = 0;
};

}  // namespace mplan::planner
