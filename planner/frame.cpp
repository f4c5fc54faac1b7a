// Frames: per-frame memory and data-parallel costs, stage tails (see frame.h).
#include "planner/frame.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "planner/input_memo.h"
#include "planner/placement.h"
#include "simulator/collectives.h"
#include "simulator/dp_costs.h"
#include "simulator/layer_cost.h"

namespace mplan::planner {

FrameBuilder::FrameBuilder(const Job& job, const CostParams& prm, const Bounds& b)
    : job_(job), prm_(framework_params(prm, *job.plan)), bounds_(b) {}

namespace {
constexpr double kSlopeProbe = 1e9;  // activation bytes the memory slopes are measured at
}  // namespace

void FrameBuilder::add_slopes(Frame& f, const PipeShape& ps, const std::vector<int>& zeros, Bounds::MemScratch& ms) const {
  if (f.slopes) return;
  std::array<std::vector<double>, 4> at_probe;
  bounds_.stage_memory_lines(f.base, ps, zeros, kSlopeProbe, ms, f.mem_base, &at_probe);
  for (int z : zeros) {
    f.mem_slope[z].assign(ps.pp, 0.0);
    for (int s = 0; s < ps.pp; ++s) f.mem_slope[z][s] = (at_probe[z][s] - f.mem_base[z][s]) / kSlopeProbe;
  }
  f.slopes = true;
}

Frame FrameBuilder::build(const Layout& base, int pipe_id, const PipeShape& ps, const std::vector<int>& zeros,
                          Bounds::MemScratch& ms, bool slopes) const {
  Frame f;
  f.base = base;
  f.pipe_id = pipe_id;
  const ClusterSpec& cl = job_.plan->cluster;
  const bool frozen = job_.plan->training.frozen_base();
  const double overhead = prm_.optimizer_overhead_s;  // as simulator/dp_costs.h charges it
  const int dp = std::max(1, base.dp), edp = std::max(1, (base.tp * base.cp * base.dp) / (base.ep * base.etp));
  f.static_mem.fill(std::numeric_limits<double>::infinity());
  bounds_.stage_memory_lines(base, ps, zeros, 0.0, ms, f.mem_base);
  for (int z : zeros) {
    // the peak over stages without activations (peak_memory_gib's value)
    f.static_mem[z] = *std::max_element(f.mem_base[z].begin(), f.mem_base[z].end());
    f.opt[z].assign(ps.pp, overhead);
    if (frozen) continue;
    for (int s = 0; s < ps.pp; ++s) {
      double dense = ps.params[s].dense / base.tp, expert = ps.params[s].expert / (double(base.ep) * base.etp);
      f.opt[z][s] = optimizer_step_s(z, dense, expert, dp, edp, cl, prm_);
    }
  }
  if (slopes) add_slopes(f, ps, zeros, ms);
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
  const GroupPlacement dp_pl = pls.first, edp_pl = pls.second;  // (lambdas below capture them)
  const int dp = std::max(1, base.dp);
  f.buckets.assign(ps.pp, 1);
  for (int s = 0; s < ps.pp; ++s) {
    double dense = ps.params[s].dense / base.tp, expert = ps.params[s].expert / (double(base.ep) * base.etp);
    if (!frozen) f.buckets[s] = dp_bucket_count(dense + expert, dp);
  }
  // Stages (and chunks) with the same parameters ask for the same collectives: each distinct input is
  // costed once and its doubles copied (same function, same arguments).
  InputMemo<2, 2> stage_memo;
  for (int z : zeros) {
    f.grad[z].assign(ps.pp, 0.0);
    f.gather[z].assign(ps.pp, 0.0);
    if (frozen || z == 3) continue;
    stage_memo.clear();
    for (int s = 0; s < ps.pp; ++s) {
      double dense = ps.params[s].dense / base.tp, expert = ps.params[s].expert / (double(base.ep) * base.etp);
      const auto v = stage_memo.get({dense, expert}, [&] {
        return std::array<double, 2>{dp_grad_reduce_s(z, dense, expert, dp_pl, edp_pl, cl, prm_),
                                     dp_param_gather_s(z, dense, expert, dp_pl, edp_pl, cl, prm_)};
      });
      f.grad[z][s] = v[0];
      f.gather[z][s] = v[1];
    }
  }
  if (std::find(zeros.begin(), zeros.end(), 3) != zeros.end() && !frozen) {
    f.fsdp_ag.assign(ps.layers.size(), 0.0);
    f.fsdp_rs.assign(ps.layers.size(), 0.0);
    InputMemo<3, 2> chunk_memo;
    for (int s = 0; s < ps.pp; ++s) {
      double dense = ps.params[s].dense / base.tp, expert = ps.params[s].expert / (double(base.ep) * base.etp);
      int stage_layers = 0;
      for (int c = 0; c < ps.vpp; ++c) stage_layers += ps.layers[size_t(s) * ps.vpp + c];
      for (int c = 0; c < ps.vpp; ++c) {
        size_t i = size_t(s) * ps.vpp + c;
        double frac = ps.params[s].dense + ps.params[s].expert > 0 ? double(ps.layers[i]) / std::max(1, stage_layers) : 0;
        const auto v = chunk_memo.get({dense, expert, frac}, [&] {
          FsdpTraffic t = fsdp_chunk_traffic(dense, expert, frac, dp_pl, edp_pl, cl, prm_);
          return std::array<double, 2>{t.gather_s, t.scatter_s};
        });
        f.fsdp_ag[i] = v[0];
        f.fsdp_rs[i] = v[1];
      }
    }
  }
}

void add_fsdp(const Frame& f, const Layout& l, const PipeShape& ps, const CostParams& prm, std::vector<ChunkTotals>& ct) {
  if (l.zero != 3 || f.fsdp_ag.empty()) return;
  auto overlapped = [&](double c, double g, int n) { return exposed_comm_s(c, g, n, prm); };
  // a chunk whose inputs are the previous chunk's (a pipeline's inner chunks) gets its doubles
  auto bits = [](double x) { return std::bit_cast<uint64_t>(x); };
  std::array<uint64_t, 4> prev{};
  int prev_n = -1;
  double fa = 0, fb = 0;
  for (size_t i = 0; i < ct.size(); ++i) {
    const std::array<uint64_t, 4> in{bits(f.fsdp_ag[i]), bits(f.fsdp_rs[i]), bits(ct[i].F), bits(ct[i].B)};
    if (in != prev || ps.layers[i] != prev_n) {
      fa = overlapped(f.fsdp_ag[i], ct[i].F, ps.layers[i]);
      fb = overlapped(f.fsdp_ag[i] + f.fsdp_rs[i], ct[i].B, ps.layers[i]);
      prev = in, prev_n = ps.layers[i];
    }
    ct[i].F += fa;
    ct[i].B += fb;
  }
}

void tail_parts(const Frame& f, const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct,
                std::vector<TailParts>& out) {
  out.resize(size_t(ps.pp));
  for (int s = 0; s < ps.pp; ++s) {
    double bw_total = 0, window = 0;
    for (int c = 0; c < ps.vpp; ++c) {
      const ChunkTotals& t = ct[size_t(s) * ps.vpp + c];
      bw_total += t.B + t.W;
      window += t.F;
    }
    const ChunkTotals& c0 = ct[size_t(s) * ps.vpp];
    TailParts& p = out[size_t(s)];
    p.buckets = f.buckets[s];
    p.share = bw_total > 0 ? (c0.B + c0.W) / bw_total : 1.0 / ps.vpp;
    p.k = std::max(1, int(std::lround(p.buckets * p.share)));
    // chunk 0's k buckets become ready during its final backward, which (with the weight-gradient
    // passes a zero-bubble stage still owes, at most pp - s) ends the stage's compute
    p.d0 = c0.B + (l.schedule == Schedule::zero_bubble ? double(ps.pp - s) * c0.W : 0.0);
    p.window = window;
  }
}

double stage_tail(const Frame& f, int z, int s, const TailParts& p, bool with_grad_bucket) {
  const double grad = f.grad[z][s], gather = f.gather[z][s];
  const int k = p.k;
  double grad_tail = grad > 0 && with_grad_bucket ? std::max(grad * p.share / k, grad * p.share - p.d0 * (k - 1) / k) : 0.0;
  double gather_tail = gather > 0 ? std::max(gather / p.buckets, gather - p.window) : 0.0;
  return grad_tail + f.opt[z][s] + gather_tail;
}

void stage_tails(const Frame& f, const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct,
                 std::vector<double>& out, bool with_grad_bucket) {
  thread_local std::vector<TailParts> parts;
  tail_parts(f, l, ps, ct, parts);
  out.assign(ps.pp, 0.0);
  for (int s = 0; s < ps.pp; ++s) out[s] = stage_tail(f, l.zero, s, parts[size_t(s)], with_grad_bucket);
}

double candidate_time_lb(const Bounds& b, const Frame& f, const Layout& cand, const PipeShape& ps, LayerCostCache& costs,
                         const CostParams& prm, double p2p_s, bool exact, std::vector<ChunkTotals>& ct, std::vector<double>& tail,
                         bool ct_ready) {
  // Selective recompute only adds time, so before its probe exists the plain costs bound it.
  Layout l = cand;
  bool approx = !exact && l.recompute == Recompute::selective;
  if (approx) l.recompute = Recompute::none;
  if (!ct_ready) b.chunk_totals(l, ps, costs.get(shape_of(l), l.recompute == Recompute::selective), ct);
  add_fsdp(f, l, ps, prm, ct);
  stage_tails(f, l, ps, ct, tail, !approx);
  return b.step_time_lb(l, ps, ct, tail, p2p_s);
}

double candidate_memory_lb(const Bounds& b, const Frame& f, const Layout& l, const PipeShape& ps, LayerCostCache& costs,
                           std::vector<ChunkTotals>& ct, std::vector<double>& act, bool ct_ready) {
  if (l.recompute == Recompute::selective) return f.static_mem[l.zero];
  if (!ct_ready) b.chunk_totals(l, ps, costs.get(shape_of(l)), ct);
  b.activations_at_first_backward(l, ps, ct, act);
  double m = 0;
  const int z = l.zero;
  for (int s = 0; s < ps.pp; ++s) m = std::max(m, f.mem_base[z][s] + f.mem_slope[z][s] * act[s]);
  return m;
}

void LevelBounds::reset(const Bounds& b, const Frame& f, const Layout& plain, const PipeShape& ps, const CostParams& prm,
                        double p2p_s, const std::vector<ChunkTotals>& ct) {
  b_ = &b, f_ = &f, ps_ = &ps, prm_ = &prm, ct_ = &ct;
  l_ = plain;
  p2p_s_ = p2p_s;
  have_act_ = have_chain_ = have_z3_ = false;
}

double LevelBounds::memory_lb(int z, bool selective) {
  if (selective) return f_->static_mem[z];
  if (!have_act_) {
    b_->activations_at_first_backward(l_, *ps_, *ct_, act_);
    have_act_ = true;
  }
  double m = 0;
  for (int s = 0; s < ps_->pp; ++s) m = std::max(m, f_->mem_base[z][s] + f_->mem_slope[z][s] * act_[s]);
  return m;
}

double LevelBounds::time_lb(int z, bool selective) {
  Layout l = l_;
  l.zero = z;
  // FSDP traffic changes the chunk costs of ZeRO 3: its own chain and tail parts (step_time_lb of
  // stage_tails, in pieces)
  const bool fsdp = z == 3 && !f_->fsdp_ag.empty();
  bool& have = fsdp ? have_z3_ : have_chain_;
  std::vector<double>& ends = fsdp ? ends_z3_ : ends_;
  std::vector<TailParts>& parts = fsdp ? parts_z3_ : parts_;
  if (!have) {
    const std::vector<ChunkTotals>* ct = ct_;
    if (fsdp) {
      z3_ = *ct_;
      add_fsdp(*f_, l, *ps_, *prm_, z3_);
      ct = &z3_;
    }
    b_->compute_ends(l, *ps_, *ct, p2p_s_, ends);
    tail_parts(*f_, l, *ps_, *ct, parts);
    have = true;
  }
  double best = 0;
  for (int s = ps_->pp - 1; s >= 0; --s) best = std::max(best, ends[s] + stage_tail(*f_, z, s, parts[size_t(s)], !selective));
  return best;
}

double p2p_time(const Job& job, const CostParams& prm, const Layout& l) {
  if (l.pp <= 1) return 0;
  const Plan& p = *job.plan;
  double bytes = p2p_activation_bytes(p.model, p.training, l.mbs, l.tp, l.cp, l.sp != 0);
  bool same = 0 / job.domain == (int64_t(l.tp) * l.cp * l.dp) / job.domain;
  return p2p_time_s(bytes, same, p.cluster, prm);
}

}  // namespace mplan::planner
