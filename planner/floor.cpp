// Probe-free structure bounds (see floor.h).
#include "planner/floor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/ops.h"
#include "core/rank_grid.h"
#include "planner/placement.h"
#include "simulator/collectives.h"
#include "simulator/compute_cost.h"

namespace mplan::planner {

namespace {

FloorPiece min_piece(const FloorPiece& a, const FloorPiece& b) {
  return {std::min(a.F, b.F),   std::min(a.B, b.B),           std::min(a.T, b.T),
          std::min(a.FB, b.FB), std::max(a.BWmax, b.BWmax), std::max(a.Wmax, b.Wmax), std::min(a.BWmin, b.BWmin)};
}

struct Variant {
  int tp = 1, cp = 1;
  bool ovl = false, split = false, frozen = false;
  Precision prec = Precision::bf16;
  GroupPlacement tp_pl, cp_pl, ep_pl, etp_pl;
  double moe_share = 1.0;  // network bytes of the MoE dispatcher over a plain all-to-all
};

// Compute costs of an op list's ops (those do not depend on the overlap variant).
std::vector<OpCost> op_costs(const std::vector<Op>& ops, const Variant& v, const ClusterSpec& cl, const CostParams& prm) {
  std::vector<OpCost> oc(ops.size());
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind != OpKind::comm) {
      bool bf16 = is_fp8_family(v.prec) && (ops[i].name == "lm_head_gemm" || ops[i].name == "router");
      oc[i] = compute_op_cost(ops[i], bf16 ? Precision::bf16 : v.prec, cl, prm);
      if (v.frozen) oc[i].bwd_weight_s = 0;
    }
  return oc;
}

// Per-layer cost of an op list without recomputation, as build_workload's costing charges it.
FloorPiece cost_list(const std::vector<Op>& ops, const std::vector<OpCost>& oc, const Variant& v, const ClusterSpec& cl,
                     const CostParams& prm) {
  auto overlapped = [&](double c, double g, int n = 1) {
    if (c <= 0) return 0.0;
    return std::max(c, g * (1.0 + prm.overlap_slowdown)) - g + std::min(c, g) / std::max(1, n);
  };
  auto placement = [&](CommGroup g) -> const GroupPlacement& {
    switch (g) {
      case CommGroup::cp: return v.cp_pl;
      case CommGroup::ep: return v.ep_pl;
      case CommGroup::etp: return v.etp_pl;
      default: return v.tp_pl;
    }
  };
  auto gemm_after = [&](size_t i) -> const OpCost* {
    for (size_t j = i + 1; j < ops.size(); ++j)
      if (ops[j].kind == OpKind::gemm) return &oc[j];
    return nullptr;
  };
  auto gemm_before = [&](size_t i) -> const OpCost* {
    for (size_t j = i; j-- > 0;)
      if (ops[j].kind == OpKind::gemm) return &oc[j];
    return nullptr;
  };
  double F = 0, B = 0, W = 0;
  size_t block_start = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.kind != OpKind::comm) {
      F += oc[i].fwd_s;
      B += oc[i].bwd_input_s;
      (v.split ? W : B) += oc[i].bwd_weight_s;
      continue;
    }
    double t = is_moe_token_all_to_all(op)
                   ? moe_all_to_all_time_s(op.comm_bytes, v.moe_share, v.ep_pl, cl, prm)
                   : collective_time_s(op.collective, op.comm_bytes, placement(op.group), cl, prm);
    const OpCost* nx = gemm_after(i);
    const OpCost* pv = gemm_before(i);
    if (op.name == "tp_allgather") {
      double g = nx ? nx->fwd_s : 0, dg = nx ? nx->bwd_input_s : 0, wg = nx ? nx->bwd_weight_s : 0;
      F += v.ovl ? overlapped(t, g, v.tp) : t;
      B += overlapped(t, dg);
      B += v.ovl ? overlapped(t, wg, v.tp) : overlapped(t, v.split ? 0 : wg);
      block_start = i + 1;
    } else if (op.name == "tp_reduce_scatter") {
      double g = pv ? pv->fwd_s : 0, dg = pv ? pv->bwd_input_s : 0;
      F += v.ovl ? overlapped(t, g, v.tp) : t;
      B += v.ovl ? overlapped(t, dg, v.tp) : t;
      block_start = i + 1;
    } else if (op.name == "tp_allreduce") {
      double wg = 0;
      for (size_t j = block_start; j < i; ++j)
        if (ops[j].kind == OpKind::gemm) {
          wg = oc[j].bwd_weight_s;
          break;
        }
      F += t;
      B += v.split ? t : overlapped(t, wg);
      block_start = i + 1;
    } else if (op.name == "cp_kv_exchange" && op.collective == Collective::send_recv) {
      int steps = v.cp - 1;
      double per = collective_time_s(Collective::send_recv, op.comm_bytes / steps, v.cp_pl, cl, prm);
      double per_b = collective_time_s(Collective::send_recv, 2 * op.comm_bytes / steps, v.cp_pl, cl, prm);
      double af = 0, ab = 0;
      for (size_t j = i + 1; j < ops.size(); ++j)
        if (ops[j].kind == OpKind::attention) {
          af = oc[j].fwd_s / v.cp;
          ab = oc[j].bwd_input_s / v.cp;
          break;
        }
      F += steps * overlapped(per, af);
      B += steps * overlapped(per_b, ab);
    } else {  // the CP all-to-all / all-gather, the EP and ETP collectives and the rest: exposed
      F += t;
      B += t;
    }
  }
  return {F, B, F + B + W, F + B, B + W, W, B + W};
}

}  // namespace

const ShapeFloor& FloorCache::get(int tp, int cp, int ep, int etp, int mbs) {
  auto key = std::make_tuple(tp, cp, ep, etp, mbs);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  ShapeFloor f = compute(tp, cp, ep, etp, mbs);
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.emplace(key, f).first->second;
}

ShapeFloor FloorCache::compute(int tp, int cp, int ep, int etp, int mbs) const {
  const Plan& p = *job_.plan;
  const ModelSpec& m = p.model;
  const ClusterSpec& cl = p.cluster;
  // the group placements of a minimal grid with these sizes (the probes' grid)
  int mp = tp * cp, ee = ep * etp;
  int dp = ee / std::gcd(ee, mp);
  auto pl = [&](Dim d) { return fast_placement(tp, cp, dp, 1, etp, ep, d, job_.domain); };
  Variant v;
  v.tp = tp;
  v.cp = cp;
  v.prec = p.training.precision;
  v.frozen = p.training.frozen_base();
  v.tp_pl = pl(Dim::tp);
  v.cp_pl = pl(Dim::cp);
  v.ep_pl = pl(Dim::ep);
  v.etp_pl = pl(Dim::etp);
  if (m.moe && p.parallel.moe_dispatcher != MoeDispatcher::alltoall)
    v.moe_share = moe_remote_share(int(m.moe->num_experts), int(m.moe->top_k), v.ep_pl, m.moe->router_num_groups,
                                   m.moe->router_group_topk);
  ModelSpec dense_model = m;
  dense_model.moe.reset();
  int first_moe = 0;
  while (m.moe && first_moe < m.num_layers && !m.is_moe_layer(first_moe)) ++first_moe;
  const double inf = std::numeric_limits<double>::infinity();
  FloorPiece big{inf, inf, inf, inf, 0, 0, inf};
  ShapeFloor out{big, big, big, big};
  std::vector<std::pair<int, int>> tpv = {{0, 0}};  // (sp, overlap)
  if (tp > 1) tpv = job_.moe ? std::vector<std::pair<int, int>>{{1, 0}, {1, 1}}
                             : std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {1, 1}};
  std::vector<OpContext::CpComm> cps = {OpContext::CpComm::p2p};
  if (cp > 1) cps = {OpContext::CpComm::p2p, OpContext::CpComm::a2a, OpContext::CpComm::allgather};
  std::vector<int> sps = tp == 1 ? std::vector<int>{0} : job_.moe ? std::vector<int>{1} : std::vector<int>{0, 1};
  for (int sp : sps)
    for (auto cc : cps) {
      OpContext oc;
      oc.tp = tp;
      oc.cp = cp;
      oc.ep = ep;
      oc.etp = etp;
      oc.sp = sp != 0;
      oc.micro_batch = mbs;
      oc.seq = job_.seq();
      oc.precision = p.training.precision;
      oc.cp_comm = cc;
      oc.flash_attention = p.parallel.attention_backend != AttentionBackend::unfused;
      oc.triton_attention = p.parallel.attention_backend == AttentionBackend::triton;
      std::vector<Op> dense_ops = layer_ops(dense_model, 0, oc), moe_ops, emb = embedding_ops(m, oc), head = head_ops(m, oc);
      if (m.moe) moe_ops = layer_ops(m, first_moe, oc);
      auto dense_c = op_costs(dense_ops, v, cl, prm_), moe_c = op_costs(moe_ops, v, cl, prm_);
      auto emb_c = op_costs(emb, v, cl, prm_), head_c = op_costs(head, v, cl, prm_);
      for (auto [tsp, ov] : tpv) {
        if (tsp != sp) continue;
        v.ovl = ov != 0;
        for (bool split : {false, true}) {
          v.split = split;
          out.dense = min_piece(out.dense, cost_list(dense_ops, dense_c, v, cl, prm_));
          if (m.moe) out.moe = min_piece(out.moe, cost_list(moe_ops, moe_c, v, cl, prm_));
          out.emb = min_piece(out.emb, cost_list(emb, emb_c, v, cl, prm_));
          out.head = min_piece(out.head, cost_list(head, head_c, v, cl, prm_));
        }
      }
    }
  if (!m.moe) out.moe = out.dense;
  return out;
}

double structure_time_lb(const Job& job, const PipeShape& ps, const Frame& f, const std::vector<int>& zeros,
                         const ShapeFloor& fl, int64_t microbatches, double p2p_s, const std::vector<int>& moe_prefix,
                         double overlap_slowdown) {
  const ModelSpec& m = job.model();
  const int pp = ps.pp, vpp = ps.vpp;
  const double mb = double(microbatches);
  const bool mtp_moe = m.mtp_num_layers > 0 && m.is_moe_layer(m.num_layers - 1);
  thread_local std::vector<FloorPiece> ch, z3;
  thread_local std::vector<double> tail, starts;
  ch.assign(size_t(pp) * vpp, FloorPiece{});
  for (int s = 0; s < pp; ++s)
    for (int c = 0; c < vpp; ++c) {
      size_t i = size_t(s) * vpp + c;
      int n = ps.layers[i], first = ps.first[i];
      int moe = moe_prefix[first + n] - moe_prefix[first];
      FloorPiece& t = ch[i];
      auto add = [&](const FloorPiece& p, double k) {
        t.F += k * p.F;
        t.B += k * p.B;
        t.T += k * p.T;
        t.FB += k * p.FB;
        t.BWmax += k * p.BWmax;
        t.Wmax += k * p.Wmax;
        t.BWmin += k * p.BWmin;
      };
      add(fl.dense, n - moe);
      add(fl.moe, moe);
      if (s == 0 && c == 0) add(fl.emb, 1);
      if (s == pp - 1 && c == vpp - 1) {
        add(mtp_moe ? fl.moe : fl.dense, m.mtp_num_layers);
        add(fl.head, 1 + m.mtp_num_layers);
      }
    }
  // what stage s must do after its last backward with ZeRO level z
  auto tail_of = [&](int z, int s) {
    if (f.opt[z].empty()) return 0.0;
    double t = f.opt[z][s];
    if (f.collectives) {
      const FloorPiece& c0 = ch[size_t(s) * vpp];
      int k = f.buckets[s];
      t += f.gather[z][s] / k;
      if (vpp == 1) {  // one chunk: every bucket waits for the last backward
        double d0 = c0.BWmax + (pp - s - 1) * c0.Wmax;
        t += std::max(f.grad[z][s] / k, f.grad[z][s] - d0 * (k - 1) / k);
      } else {  // chunk 0's share of the buckets waits for its last backward, which ends the compute
        double bw_max = 0;
        for (int c = 0; c < vpp; ++c) bw_max += ch[size_t(s) * vpp + c].BWmax;
        double share_lb = bw_max > 0 ? c0.BWmin / bw_max : 0;
        t += std::max(0.0, f.grad[z][s] * share_lb - c0.BWmax);
      }
    }
    return t;
  };
  // the chain bound of bounds.h over chunk pieces, with per-stage tails
  auto chain = [&](const std::vector<FloorPiece>& pc, const std::vector<double>& tail) {
    double start = 0, best = 0, last_b_next = 0;
    starts.resize(pp);
    for (int s = 0; s < pp; ++s) {
      starts[s] = start;
      start += pc[size_t(s) * vpp].F + p2p_s;
    }
    for (int s = pp - 1; s >= 0; --s) {
      double busy = 0, fb = 0;
      for (int c = 0; c < vpp; ++c) {
        busy += pc[size_t(s) * vpp + c].T;
        fb += pc[size_t(s) * vpp + c].FB;
      }
      double own = starts[s] + mb * fb;
      double last_b = s == pp - 1 ? own : std::max(own, last_b_next + pc[size_t(s) * vpp].B + p2p_s);
      double ce = std::max(starts[s] + mb * busy, last_b);
      best = std::max(best, ce + tail[s]);
      last_b_next = last_b;
    }
    return best;
  };
  double best = std::numeric_limits<double>::infinity();
  tail.resize(pp);
  // ZeRO 0-2: the smallest tail of the allowed levels
  bool any = false;
  for (int s = 0; s < pp; ++s) tail[s] = std::numeric_limits<double>::infinity();
  for (int z : zeros)
    if (z < 3) {
      any = true;
      for (int s = 0; s < pp; ++s) tail[s] = std::min(tail[s], tail_of(z, s));
    }
  if (any) best = chain(ch, tail);
  // ZeRO 3: the FSDP gathers and scatters each chunk cannot hide. With g a lower bound of a chunk's
  // compute, g + overlapped(c, g) is a lower bound of the chunk with its traffic (increasing in g).
  if (std::find(zeros.begin(), zeros.end(), 3) != zeros.end()) {
    z3 = ch;
    if (!f.fsdp_ag.empty()) {
      auto overlapped = [&](double c, double g, int n) {
        if (c <= 0) return 0.0;
        return std::max(c, g * (1.0 + overlap_slowdown)) - g + std::min(c, g) / std::max(1, n);
      };
      for (size_t i = 0; i < z3.size(); ++i) {
        double F = ch[i].F + overlapped(f.fsdp_ag[i], ch[i].F, ps.layers[i]);
        double B = ch[i].B + overlapped(f.fsdp_ag[i] + f.fsdp_rs[i], ch[i].B, ps.layers[i]);
        z3[i].F = F;
        z3[i].B = B;
        z3[i].FB = std::max(ch[i].FB, F + B);
        z3[i].T = std::max(ch[i].T, F + B);
      }
    }
    for (int s = 0; s < pp; ++s) tail[s] = tail_of(3, s);
    best = std::min(best, chain(z3, tail));
  }
  return std::isfinite(best) ? best : 0.0;
}

}  // namespace mplan::planner
