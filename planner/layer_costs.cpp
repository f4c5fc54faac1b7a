// Probe plans -> per-layer costs (see layer_costs.h).
#include "planner/layer_costs.h"

#include <algorithm>
#include <array>
#include <numeric>

#include "core/parallel_for.h"

#include "simulator/layer_cost.h"

namespace mplan::planner {

namespace {

PieceCost piece(const ChunkCost& c) {
  PieceCost p;
  p.F = c.F.total();
  p.B = c.B.total();
  p.W = c.W.total();
  p.act = c.act_bytes;
  p.act_w = c.act_w_bytes;
  p.transient = c.transient_bytes;
  p.fwd_transient = c.fwd_transient_bytes;
  return p;
}

// a - b for the additive parts; the transient (a max, not a sum) is taken as given.
PieceCost minus(const PieceCost& a, const PieceCost& b, double transient) {
  PieceCost r;
  r.F = a.F - b.F;
  r.B = a.B - b.B;
  r.W = a.W - b.W;
  r.act = a.act - b.act;
  r.act_w = a.act_w - b.act_w;
  r.transient = transient;
  return r;
}

Plan probe_plan(const Plan& job, const ShapeKey& k, bool moe_type, bool full_mode) {
  Plan p;
  p.model = job.model;
  p.model.mtp_num_layers = 0;
  if (moe_type) {
    p.model.moe->first_k_dense_layers = 0;
    p.model.moe->moe_layer_freq = 1;
  } else {
    p.model.moe.reset();
  }
  p.model.num_layers = full_mode ? 5 : 3;
  // Sliding-window models alternate windowed and full-attention layers; the probe's layers are all
  // windowed (the cheaper kind), so the per-layer costs stay a lower bound of simulate()'s (exact for
  // models without a window).
  p.model.window_attn_skip_freq = 0;
  p.cluster = job.cluster;
  p.training = job.training;
  ParallelConfig& q = p.parallel;
  q.tp = k.tp;
  q.sp = k.sp != 0;
  q.tp_comm_overlap = k.overlap != 0;
  q.cp = k.cp;
  q.cp_comm_type = CpCommType(k.cp_comm);
  q.ep = moe_type ? k.ep : 1;
  q.etp = moe_type ? k.etp : 1;
  int mp = k.tp * k.cp, ee = q.ep * q.etp;
  int dp = ee / std::gcd(ee, mp);
  q.pp = full_mode ? 4 : 3;
  q.world_size = mp * q.pp * dp;
  q.micro_batch_size = k.mbs;
  p.training.global_batch_size = int64_t(k.mbs) * dp;
  q.zero = 1;
  q.recompute = full_mode ? Recompute::full : Recompute::selective;
  q.recompute_num_layers = full_mode ? 1 : 0;
  q.schedule = k.split_w ? Schedule::zero_bubble : Schedule::one_f_one_b;
  copy_job_runtime(q, job.parallel);  // the job's runtime options, as every candidate has
  if (!full_mode) q.recompute_modules.bits = k.rmods;
  q.offload_modules.bits = k.offload;
  q.moe_a2a_overlap = moe_type && k.a2a != 0;  // layer costs only (the probe's full recompute is not validated)
  q.dp_replicate = 1;
  q.pipeline_layout =
      full_mode ? std::vector<std::vector<int>>{{1}, {1}, {2}, {1}} : std::vector<std::vector<int>>{{1}, {1}, {1}};
  int per_node = std::max(1, p.cluster.gpus_per_node);
  p.cluster.num_nodes = std::max(p.cluster.num_nodes, (q.world_size + per_node - 1) / per_node);
  return p;
}

}  // namespace

ShapeKey shape_of(const Layout& l) {
  return {l.tp,
          l.cp,
          l.ep,
          l.etp,
          l.mbs,
          l.sp,
          l.overlap,
          uint8_t(l.cp_comm),
          uint8_t(l.schedule == Schedule::zero_bubble),
          l.recompute == Recompute::selective ? l.rmods : 0u,
          l.offload,
          l.a2a};
}

LayerCostCache::LayerCostCache(const Plan& job, const CostParams& prm, bool share_probes)
    : job_(job), prm_(prm), share_(share_probes) {}

namespace {
bool has_dense_layers(const ModelSpec& m) {
  return !m.moe || m.num_moe_layers() < m.num_layers || (m.mtp_num_layers > 0 && !m.is_moe_layer(m.num_layers - 1));
}
}  // namespace

ShapeKey LayerCostCache::dense_key(const ShapeKey& k) {
  ShapeKey d = k;
  d.ep = d.etp = 1;
  d.a2a = 0;
  return d;
}

bool LayerCostCache::find_dense(const ShapeKey& k, bool full_mode, TypeCosts& tc) const {
  if (!share_ || !job_.model.moe) return false;
  std::lock_guard<std::mutex> lock(dense_mu_);
  auto it = dense_.find(dense_key(k));
  if (it == dense_.end() || !(full_mode ? it->second.has_full : it->second.has_selective)) return false;
  if (full_mode) {
    tc.none = it->second.costs.none;
    tc.full = it->second.costs.full;
  } else {
    tc.selective = it->second.costs.selective;
  }
  return true;
}

void LayerCostCache::keep_dense(const ShapeKey& k, bool full_mode, const TypeCosts& tc) const {
  if (!share_ || !job_.model.moe) return;
  std::lock_guard<std::mutex> lock(dense_mu_);
  DenseProbe& d = dense_[dense_key(k)];
  if (full_mode) {
    d.costs.none = tc.none;
    d.costs.full = tc.full;
    d.has_full = true;
  } else {
    d.costs.selective = tc.selective;
    d.has_selective = true;
  }
}

ShapeCosts LayerCostCache::compute(const ShapeKey& k) const {
  ShapeCosts sc;
  const ModelSpec& m = job_.model;
  const bool has_moe = m.moe.has_value();
  for (bool moe_type : {false, true}) {
    if ((moe_type && !has_moe) || (!moe_type && !has_dense_layers(m))) continue;
    TypeCosts& tc = moe_type ? sc.moe : sc.dense;
    if (!moe_type && find_dense(k, true, tc)) continue;
    Workload f = build_workload(probe_plan(job_, k, moe_type, true), prm_);
    const ListMemory& lm = moe_type ? f.moe_mem : f.dense_mem;
    PieceCost r = piece(f.stages[1].chunks[0]);
    tc.full = r;
    tc.full.transient = lm.bwd_full;
    tc.full.fwd_transient = lm.fwd;
    tc.none = minus(piece(f.stages[2].chunks[0]), r, lm.bwd_none);
    tc.none.fwd_transient = lm.fwd;
    if (!moe_type) keep_dense(k, true, tc);
    // the embedding and head ops are those of the model itself (MoE when the model is MoE)
    if (moe_type == has_moe) {
      sc.emb = minus(piece(f.stages[0].chunks[0]), r, f.emb_mem.bwd_none);
      sc.emb.fwd_transient = f.emb_mem.fwd;
      sc.head = minus(piece(f.stages[3].chunks[0]), r, f.head_mem.bwd_none);
      sc.head.fwd_transient = f.head_mem.fwd;
    }
  }
  return sc;
}

void LayerCostCache::compute_selective(const ShapeKey& k, ShapeCosts& sc) const {
  const ModelSpec& m = job_.model;
  const bool has_moe = m.moe.has_value();
  for (bool moe_type : {false, true}) {
    if ((moe_type && !has_moe) || (!moe_type && !has_dense_layers(m))) continue;
    TypeCosts& tc = moe_type ? sc.moe : sc.dense;
    if (!moe_type && find_dense(k, false, tc)) continue;
    Workload s = build_workload(probe_plan(job_, k, moe_type, false), prm_);
    const ListMemory& lm = moe_type ? s.moe_mem : s.dense_mem;
    PieceCost sel = piece(s.stages[1].chunks[0]);
    sel.transient = lm.bwd_selective;
    sel.fwd_transient = lm.fwd;
    tc.selective = sel;
    if (!moe_type) keep_dense(k, false, tc);
    if (moe_type == has_moe) {
      sc.emb_sel = minus(piece(s.stages[0].chunks[0]), sel, s.emb_mem.bwd_selective);
      sc.emb_sel.fwd_transient = s.emb_mem.fwd;
      sc.head_sel = minus(piece(s.stages[2].chunks[0]), sel, s.head_mem.bwd_selective);
      sc.head_sel.fwd_transient = s.head_mem.fwd;
    }
  }
  sc.has_selective = true;
}

namespace {
// Fills the selective-recompute parts of a cached entry (the rest of it is immutable: other threads read it).
void take_selective(ShapeCosts& entry, const ShapeCosts& from) {
  entry.dense.selective = from.dense.selective;
  entry.moe.selective = from.moe.selective;
  entry.emb_sel = from.emb_sel;
  entry.head_sel = from.head_sel;
  entry.has_selective = true;
}
}  // namespace

void LayerCostCache::add_a2a_delta(const ShapeKey& k, ShapeCosts& sc) const {
  if (!job_.model.moe) return;
  // layer_timing reads neither the recompute nor the offloaded modules (no recomputation, no memory):
  // shapes that differ only there share the delta
  ShapeKey kd = k;
  kd.rmods = kd.offload = 0;
  std::array<double, 3> d{};
  bool have = false;
  if (share_) {
    std::lock_guard<std::mutex> lock(dense_mu_);
    if (auto it = a2a_delta_.find(kd); it != a2a_delta_.end()) d = it->second, have = true;
  }
  if (!have) {
    Plan p = probe_plan(job_, k, true, false);  // layer 0 is a MoE layer
    p.parallel.moe_a2a_overlap = true;
    ListTiming on = layer_timing(p, prm_, 0);
    p.parallel.moe_a2a_overlap = false;
    ListTiming off = layer_timing(p, prm_, 0);
    d = {on.F.total() - off.F.total(), on.B.total() - off.B.total(), on.W.total() - off.W.total()};
    if (share_) {
      std::lock_guard<std::mutex> lock(dense_mu_);
      a2a_delta_.emplace(kd, d);
    }
  }
  const double dF = d[0], dB = d[1], dW = d[2];
  for (PieceCost* pc : {&sc.moe.none, &sc.moe.full, &sc.moe.selective}) {
    pc->F += dF;
    pc->B += dB;
    pc->W += dW;
  }
}

const ShapeCosts* LayerCostCache::find_ready(const ShapeKey& k, bool selective, ShapeCosts*& entry) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(k);
  if (it == cache_.end()) return nullptr;
  entry = it->second.get();
  return !selective || entry->has_selective ? entry : nullptr;
}

const ShapeCosts& LayerCostCache::get_a2a(const ShapeKey& k, bool selective) {
  ShapeCosts* entry = nullptr;
  if (const ShapeCosts* ready = find_ready(k, selective, entry)) return *ready;
  ShapeKey k0 = k;
  k0.a2a = 0;
  ShapeCosts d = get(k0, selective);
  add_a2a_delta(k, d);
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = cache_.emplace(k, nullptr);
  if (inserted) {
    it->second = std::make_unique<ShapeCosts>(d);
  } else if (selective && !it->second->has_selective) {
    take_selective(*it->second, d);
  }
  return *it->second;
}

const ShapeCosts& LayerCostCache::get(const ShapeKey& k, bool selective) {
  if (k.a2a) return get_a2a(k, selective);
  ShapeCosts* entry = nullptr;
  if (const ShapeCosts* ready = find_ready(k, selective, entry)) return *ready;
  if (!entry) {
    // the full-recompute probe reads no selective modules (probe_plan): a selective shape's plain
    // parts are those of the shape without them (the same plan, the same doubles)
    const bool derived = share_ && k.rmods != 0;
    std::unique_ptr<ShapeCosts> v;
    if (derived) {
      ShapeKey k0 = k;
      k0.rmods = 0;
      v = std::make_unique<ShapeCosts>(get(k0, false));
      v->has_selective = false;
    } else {
      v = std::make_unique<ShapeCosts>(compute(k));
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = cache_.emplace(k, std::move(v));
    if (inserted && !derived) ++probes_;
    entry = it->second.get();
    if (!selective || entry->has_selective) return *entry;
  }
  ShapeCosts tmp;  // the selective parts only (the rest of *entry is immutable)
  compute_selective(k, tmp);
  std::lock_guard<std::mutex> lock(mu_);
  if (!entry->has_selective) {
    take_selective(*entry, tmp);
    ++probes_;
  }
  return *entry;
}

void LayerCostCache::prefill(const std::vector<ShapeKey>& keys, int threads) {
  prefill_with(keys, [threads](size_t n, const std::function<void(size_t, size_t)>& fn) { parallel_for(n, threads, fn); });
}

void LayerCostCache::prefill(const std::vector<ShapeKey>& keys, WorkerPool& pool) {
  prefill_with(keys, [&pool](size_t n, const std::function<void(size_t, size_t)>& fn) { pool.run(n, fn); });
}

void LayerCostCache::prefill_with(const std::vector<ShapeKey>& keys_in, const Loop& loop) {
  auto same = [](const ShapeKey& a, const ShapeKey& b) { return !(a < b) && !(b < a); };
  std::vector<ShapeKey> keys = keys_in, todo, derived;  // each shape once (a structure's variants repeat them)
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end(), same), keys.end());
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& k : keys) {
      if (cache_.count(k)) continue;
      if (!k.a2a) {
        todo.push_back(k);
        continue;
      }
      derived.push_back(k);  // from the same shape without the overlap (add_a2a_delta)
      ShapeKey k0 = k;
      k0.a2a = 0;
      if (!cache_.count(k0)) todo.push_back(k0);
    }
  }
  std::sort(todo.begin(), todo.end());
  todo.erase(std::unique(todo.begin(), todo.end(), same), todo.end());
  std::vector<std::unique_ptr<ShapeCosts>> out(todo.size());
  // a worker's exception (e.g. std::bad_alloc) reaches the caller once all workers have stopped
  loop(todo.size(), [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) out[i] = std::make_unique<ShapeCosts>(compute(todo[i]));
  });
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < todo.size(); ++i)
      if (cache_.emplace(todo[i], std::move(out[i])).second) ++probes_;
  }
  for (const ShapeKey& k : derived) get_a2a(k, false);
}

}  // namespace mplan::planner
