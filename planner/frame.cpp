// Frames: per-frame memory and data-parallel costs, stage tails (see frame.h).
#include "planner/frame.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "planner/placement.h"
#include "simulator/collectives.h"

namespace mplan::planner {

Frame FrameBuilder::build(const Layout& base, int pipe_id, const PipeShape& ps, const std::vector<int>& zeros,
                          Bounds::MemScratch& ms) const {
  Frame f;
  f.base = base;
  f.pipe_id = pipe_id;
  const ClusterSpec& cl = job_.plan->cluster;
  const bool frozen = job_.plan->training.frozen_base();
  const double overhead = std::max(0.0, prm_.optimizer_overhead_s);
  const int dp = std::max(1, base.dp), edp = std::max(1, (base.tp * base.cp * base.dp) / (base.ep * base.etp));
  f.static_mem.fill(std::numeric_limits<double>::infinity());
  for (int z : zeros) {
    Layout l = base;
    l.zero = z;
    f.static_mem[z] = bounds_.peak_memory_gib(l, ps, {}, ms);
    f.mem_base[z].assign(ps.pp, 0.0);
    f.mem_slope[z].assign(ps.pp, 0.0);
    for (int s = 0; s < ps.pp; ++s) {
      const double probe = 1e9;
      f.mem_base[z][s] = bounds_.stage_memory_gib(l, ps, s, 0.0, ms);
      f.mem_slope[z][s] = (bounds_.stage_memory_gib(l, ps, s, probe, ms) - f.mem_base[z][s]) / probe;
    }
    f.opt[z].assign(ps.pp, overhead);
    if (frozen) continue;
    for (int s = 0; s < ps.pp; ++s) {
      double dense = ps.params[s].dense / base.tp, expert = ps.params[s].expert / (double(base.ep) * base.etp);
      double local = z >= 1 ? dense / dp + expert / edp : dense + expert;
      f.opt[z][s] = local * 34.0 / (cl.gpu.hbm_gbps * 1e9 * prm_.hbm_eff) + overhead;
    }
  }
  return f;
}

void FrameBuilder::add_collectives(Frame& f, const PipeShape& ps, const std::vector<int>& zeros) {
  if (f.collectives) return;
  f.collectives = true;
  const Layout& base = f.base;
  const ClusterSpec& cl = job_.plan->cluster;
  const bool frozen = job_.plan->training.frozen_base();
  auto key = std::make_tuple(base.tp, base.cp, base.dp, base.pp, base.etp, base.ep);
  std::pair<GroupPlacement, GroupPlacement> pls;
  bool have = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = placements_.find(key);
    if (it != placements_.end()) {
      pls = it->second;
      have = true;
    }
  }
  if (!have) {
    pls = {fast_placement(base.tp, base.cp, base.dp, base.pp, base.etp, base.ep, Dim::dp, job_.domain),
           fast_placement(base.tp, base.cp, base.dp, base.pp, base.etp, base.ep, Dim::edp, job_.domain)};
    std::lock_guard<std::mutex> lock(mu_);
    placements_.emplace(key, pls);
  }
  const auto [dp_pl, edp_pl] = pls;
  const int dp = std::max(1, base.dp);
  f.buckets.assign(ps.pp, 1);
  for (int s = 0; s < ps.pp; ++s) {
    double dense = ps.params[s].dense / base.tp, expert = ps.params[s].expert / (double(base.ep) * base.etp);
    if (!frozen) f.buckets[s] = std::max(1, int(std::ceil((dense + expert) / std::max(40e6, 1e6 * dp))));
  }
  for (int z : zeros) {
    f.grad[z].assign(ps.pp, 0.0);
    f.gather[z].assign(ps.pp, 0.0);
    if (frozen || z == 3) continue;
    for (int s = 0; s < ps.pp; ++s) {
      double dense = ps.params[s].dense / base.tp, expert = ps.params[s].expert / (double(base.ep) * base.etp);
      Collective gc = z == 0 ? Collective::all_reduce : Collective::reduce_scatter;
      f.grad[z][s] = collective_time_s(gc, dense * 4, dp_pl, cl, prm_) + collective_time_s(gc, expert * 4, edp_pl, cl, prm_);
      if (z > 0)
        f.gather[z][s] = collective_time_s(Collective::all_gather, dense * 2, dp_pl, cl, prm_) +
                         collective_time_s(Collective::all_gather, expert * 2, edp_pl, cl, prm_);
    }
  }
  if (std::find(zeros.begin(), zeros.end(), 3) != zeros.end() && !frozen) {
    f.fsdp_ag.assign(ps.layers.size(), 0.0);
    f.fsdp_rs.assign(ps.layers.size(), 0.0);
    for (int s = 0; s < ps.pp; ++s) {
      double dense = ps.params[s].dense / base.tp, expert = ps.params[s].expert / (double(base.ep) * base.etp);
      int stage_layers = 0;
      for (int c = 0; c < ps.vpp; ++c) stage_layers += ps.layers[size_t(s) * ps.vpp + c];
      for (int c = 0; c < ps.vpp; ++c) {
        size_t i = size_t(s) * ps.vpp + c;
        double frac = ps.params[s].dense + ps.params[s].expert > 0 ? double(ps.layers[i]) / std::max(1, stage_layers) : 0;
        f.fsdp_ag[i] = collective_time_s(Collective::all_gather, dense * 2 * frac, dp_pl, cl, prm_) +
                       collective_time_s(Collective::all_gather, expert * 2 * frac, edp_pl, cl, prm_);
        f.fsdp_rs[i] = collective_time_s(Collective::reduce_scatter, dense * 4 * frac, dp_pl, cl, prm_) +
                       collective_time_s(Collective::reduce_scatter, expert * 4 * frac, edp_pl, cl, prm_);
      }
    }
  }
}

void add_fsdp(const Frame& f, const Layout& l, const PipeShape& ps, double slowdown, std::vector<ChunkTotals>& ct) {
  if (l.zero != 3 || f.fsdp_ag.empty()) return;
  auto overlapped = [&](double c, double g, int n) {
    if (c <= 0) return 0.0;
    return std::max(c, g * (1.0 + slowdown)) - g + std::min(c, g) / std::max(1, n);
  };
  for (size_t i = 0; i < ct.size(); ++i) {
    double fa = overlapped(f.fsdp_ag[i], ct[i].F, ps.layers[i]);
    double fb = overlapped(f.fsdp_ag[i] + f.fsdp_rs[i], ct[i].B, ps.layers[i]);
    ct[i].F += fa;
    ct[i].B += fb;
  }
}

void stage_tails(const Frame& f, const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct,
                 std::vector<double>& out, bool with_grad_bucket) {
  out.assign(ps.pp, 0.0);
  const int z = l.zero;
  for (int s = 0; s < ps.pp; ++s) {
    double bw_total = 0, window = 0;
    for (int c = 0; c < ps.vpp; ++c) {
      const ChunkTotals& t = ct[size_t(s) * ps.vpp + c];
      bw_total += t.B + t.W;
      window += t.F;
    }
    const ChunkTotals& c0 = ct[size_t(s) * ps.vpp];
    double grad = f.grad[z][s], gather = f.gather[z][s];
    int buckets = f.buckets[s];
    double share = bw_total > 0 ? (c0.B + c0.W) / bw_total : 1.0 / ps.vpp;
    int k = std::max(1, int(std::lround(buckets * share)));
    // chunk 0's k buckets become ready during its final backward, which (with the weight-gradient
    // passes a zero-bubble stage still owes, at most pp - s) ends the stage's compute
    double d0 = c0.B + (l.schedule == Schedule::zero_bubble ? double(ps.pp - s) * c0.W : 0.0);
    double grad_tail = grad > 0 && with_grad_bucket ? std::max(grad * share / k, grad * share - d0 * (k - 1) / k) : 0.0;
    double gather_tail = gather > 0 ? std::max(gather / buckets, gather - window) : 0.0;
    out[s] = grad_tail + f.opt[z][s] + gather_tail;
  }
}

double p2p_time(const Job& job, const CostParams& prm, const Layout& l) {
  if (l.pp <= 1) return 0;
  const Plan& p = *job.plan;
  double tokens = double(l.mbs) * double(job.seq()) / l.cp;
  double bytes = tokens / (l.sp ? l.tp : 1) * double(p.model.hidden_size) * activation_bytes(p.training.precision);
  bool same = 0 / job.domain == (int64_t(l.tp) * l.cp * l.dp) / job.domain;
  return p2p_time_s(bytes, same, p.cluster, prm);
}

}  // namespace mplan::planner
