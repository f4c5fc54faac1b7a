// Gradient synchronisation, clipping and AdamW over the flat parameter buffers (DDP or ZeRO-1).
#include "executor/optim/optimizer.h"

#include <algorithm>
#include <cmath>

namespace mplan::exec {

Comm* DistributedOptimizer::group(Exec& ex, ParamClass c) const {
  return c == ParamClass::dense ? ex.g.dp_cp.get() : ex.g.edp.get();
}

DistributedOptimizer::DistributedOptimizer(Exec& ex, const OptimConfig& cfg) : cfg_(cfg) {
  for (ParamClass c : {ParamClass::dense, ParamClass::expert}) {
    const int i = int(c);
    const int64_t n = ex.ps.size(c);
    sharded_[i] = ex.d.zero >= 1 && group(ex, c)->size() > 1 && n > 0;
    if (sharded_[i]) {
      Comm* g = group(ex, c);
      const int64_t shard = n / g->size();
      lo_[i] = int64_t(g->rank()) * shard;
      hi_[i] = lo_[i] + shard;
      shard_grad_[i] = ex.alloc({shard});
    } else {
      lo_[i] = 0;
      hi_[i] = n;
    }
    m_[i] = ex.alloc({hi_[i] - lo_[i]});
    v_[i] = ex.alloc({hi_[i] - lo_[i]});
  }
}

void DistributedOptimizer::sync_partial_grads(Exec& ex) {
  for (size_t h = 0; h < ex.ps.entries().size(); ++h) {
    const ParamEntry& e = ex.ps.entry(int(h));
    if (e.reduce_tp && ex.d.tp > 1) {
      OpTimers::Scope t(ex.timers, "tp_allreduce");
      ex.g.tp->all_reduce_sum(ex.ps.g(int(h)), e.numel());
    }
    if (e.reduce_etp && ex.d.etp > 1) {
      OpTimers::Scope t(ex.timers, "tp_allreduce");
      ex.g.etp->all_reduce_sum(ex.ps.g(int(h)), e.numel());
    }
    if (e.embedding_group && ex.g.embedding) {
      OpTimers::Scope t(ex.timers, "dp_allreduce");
      ex.g.embedding->all_reduce_sum(ex.ps.g(int(h)), e.numel());
    }
  }
}

void DistributedOptimizer::reduce_grads(Exec& ex, ParamClass c) {
  Comm* g = group(ex, c);
  Tensor& grads = ex.ps.grads(c);
  const int64_t n = ex.ps.size(c);
  if (sharded_[int(c)]) {
    OpTimers::Scope t(ex.timers, "dp_reduce_scatter");
    g->reduce_scatter_sum(grads.data(), shard_grad_[int(c)].data(), n / g->size());
  } else if (g->size() > 1 && n > 0) {
    OpTimers::Scope t(ex.timers, "dp_allreduce");
    g->all_reduce_sum(grads.data(), n);
  }
}

namespace {
// True when this rank's copy of the entry counts in the global gradient norm.
bool counted(const Exec& ex, const ParamEntry& e) {
  if (e.tied_copy) return false;
  if (e.tp_duplicate && ex.d.tp_rank != 0) return false;
  if (e.etp_duplicate && ex.d.etp_rank != 0) return false;
  return true;
}
}  // namespace

double DistributedOptimizer::local_norm_sq(Exec& ex, ParamClass c) {
  const int i = int(c);
  if (!sharded_[i] && group(ex, c)->rank() != 0) return 0;  // replicas of the same reduced gradients
  const float* g = sharded_[i] ? shard_grad_[i].data() : ex.ps.grads(c).data();
  double s = 0;
  for (const ParamEntry& e : ex.ps.entries()) {
    if (e.cls != c || !counted(ex, e)) continue;
    const int64_t a = std::max(lo_[i], e.offset), b = std::min(hi_[i], e.offset + e.numel());
    if (a < b) s += ex.be.sum_squares(g + (a - lo_[i]), b - a);
  }
  return s;
}

void DistributedOptimizer::update(Exec& ex, ParamClass c, const AdamWArgs& base, float clip_coef) {
  const int i = int(c);
  float* p = ex.ps.params(c).data();
  float* g = sharded_[i] ? shard_grad_[i].data() : ex.ps.grads(c).data() + lo_[i];
  OpTimers::Scope t(ex.timers, "adamw");
  for (const ParamEntry& e : ex.ps.entries()) {
    if (e.cls != c) continue;
    const int64_t a = std::max(lo_[i], e.offset), b = std::min(hi_[i], e.offset + e.numel());
    if (a >= b) continue;
    float* ga = g + (a - lo_[i]);
    if (clip_coef != 1.0f) ex.be.scale(ga, clip_coef, b - a);
    AdamWArgs args = base;
    args.weight_decay = e.decay ? cfg_.weight_decay : 0.0f;
    ex.be.adamw(p + a, ga, m_[i].data() + (a - lo_[i]), v_[i].data() + (a - lo_[i]), b - a, args);
  }
}

void DistributedOptimizer::gather_params(Exec& ex, ParamClass c) {
  if (!sharded_[int(c)]) return;
  Comm* g = group(ex, c);
  OpTimers::Scope t(ex.timers, "dp_allgather");
  const int64_t shard = hi_[int(c)] - lo_[int(c)];
  Tensor tmp = ex.alloc({shard});
  ex.be.copy(tmp.data(), ex.ps.params(c).data() + lo_[int(c)], shard);
  g->all_gather(tmp.data(), ex.ps.params(c).data(), shard);
}

OptimStepResult DistributedOptimizer::step(Exec& ex, int step) {
  OptimStepResult r;
  sync_partial_grads(ex);
  reduce_grads(ex, ParamClass::dense);
  reduce_grads(ex, ParamClass::expert);
  double sq = local_norm_sq(ex, ParamClass::dense) + local_norm_sq(ex, ParamClass::expert);
  ex.g.world->all_reduce_sum(&sq, 1);
  r.grad_norm = std::sqrt(sq);
  r.lr = cfg_.schedule.at(step);
  r.finite = std::isfinite(r.grad_norm);
  if (r.finite) {
    float coef = 1.0f;
    if (cfg_.clip_grad > 0 && r.grad_norm > cfg_.clip_grad) coef = float(cfg_.clip_grad / (r.grad_norm + 1e-6));
    AdamWArgs a;
    a.lr = r.lr;
    a.beta1 = cfg_.beta1;
    a.beta2 = cfg_.beta2;
    a.eps = cfg_.eps;
    a.step = step;
    update(ex, ParamClass::dense, a, coef);
    update(ex, ParamClass::expert, a, coef);
    gather_params(ex, ParamClass::dense);
    gather_params(ex, ParamClass::expert);
  }
  for (ParamClass c : {ParamClass::dense, ParamClass::expert}) ex.be.zero(ex.ps.grads(c).data(), ex.ps.size(c));
  return r;
}

}  // namespace mplan::exec
