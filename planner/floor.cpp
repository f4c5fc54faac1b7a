// Probe-free structure bounds (see floor.h).
#include "planner/floor.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "core/framework.h"
#include "core/ops.h"
#include "core/rank_grid.h"
#include "planner/placement.h"
#include "simulator/collectives.h"
#include "simulator/compute_cost.h"
#include "simulator/layer_cost.h"

namespace mplan::planner {

namespace {

FloorPiece min_piece(const FloorPiece& a, const FloorPiece& b) {
  return {std::min(a.F, b.F),         std::min(a.B, b.B),       std::min(a.T, b.T),        std::min(a.FB, b.FB),
          std::max(a.BWmax, b.BWmax), std::max(a.Wmax, b.Wmax), std::min(a.BWmin, b.BWmin)};
}

// A list's floor piece: the simulator's own per-list timing (simulator/layer_cost.h), no recompute.
FloorPiece piece_of(const std::vector<Op>& ops, const std::vector<OpCost>& oc, const ListTimingContext& x) {
  ListTiming t = time_op_list(ops, oc, x);
  double F = t.F.total(), B = t.B.total(), W = t.W.total();
  return {F, B, F + B + W, F + B, B + W, W, B + W};
}

}  // namespace

FloorCache::FloorCache(const Job& job, const CostParams& prm, bool share_dense)
    : job_(job), prm_(framework_params(prm, *job.plan)), share_dense_(share_dense) {}

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
  ListTimingContext v;
  v.cl = &cl;
  v.prm = &prm_;
  v.tp = tp;
  v.cp = cp;
  v.prec = p.training.precision;
  v.frozen = p.training.frozen_base();
  v.tp_overlap_share = framework_runs(p.training.framework).tp_overlap_share;
  v.per_expert_gemms = per_expert_gemms(p);  // as build_workload sets it
  v.tp_pl = pl(Dim::tp);
  v.cp_pl = pl(Dim::cp);
  v.ep_pl = pl(Dim::ep);
  v.etp_pl = pl(Dim::etp);
  set_moe_dispatch_shares(v, m, p.parallel.moe_dispatcher, ep);
  const double inf = std::numeric_limits<double>::infinity();
  FloorPiece big{inf, inf, inf, inf, 0, 0, inf};
  ShapeFloor out{big, big, big, big};
  // The dense layer, embedding and head lists read neither ep, etp nor the expert groups (core/ops.cpp
  // builds the expert ops in moe_mlp only): shapes with the same tp, cp, micro-batch and tp/cp
  // placements share their pieces (the same lists, the same doubles).
  const DenseKey dk{tp,
                    cp,
                    mbs,
                    v.tp_pl.size,
                    v.tp_pl.domains,
                    v.tp_pl.max_per_domain,
                    v.tp_pl.uniform,
                    v.cp_pl.size,
                    v.cp_pl.domains,
                    v.cp_pl.max_per_domain,
                    v.cp_pl.uniform};
  bool have_dense = false;
  if (share_dense_) {
    std::lock_guard<std::mutex> lock(dense_mu_);
    auto it = dense_.find(dk);
    if (it != dense_.end()) {
      out.dense = it->second.dense, out.emb = it->second.emb, out.head = it->second.head;
      have_dense = true;
    }
  }
  min_over_variants(tp, cp, ep, etp, mbs, v, !have_dense, out);
  if (share_dense_ && !have_dense) {
    std::lock_guard<std::mutex> lock(dense_mu_);
    dense_.emplace(dk, out);
  }
  if (!m.moe) out.moe = out.dense;
  return out;
}

void FloorCache::min_over_variants(int tp, int cp, int ep, int etp, int mbs, ListTimingContext& v, bool dense,
                                   ShapeFloor& out) const {
  const Plan& p = *job_.plan;
  const ModelSpec& m = p.model;
  ModelSpec dense_model = m;
  dense_model.moe.reset();
  int first_moe = 0;
  while (m.moe && first_moe < m.num_layers && !m.is_moe_layer(first_moe)) ++first_moe;
  std::vector<std::pair<int, int>> tpv = {{0, 0}};  // (sp, overlap)
  if (tp > 1)
    tpv = job_.moe ? std::vector<std::pair<int, int>>{{1, 0}, {1, 1}} : std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {1, 1}};
  std::vector<CpCommType> cps = {CpCommType::p2p};
  if (cp > 1) cps = {CpCommType::p2p, CpCommType::a2a, CpCommType::allgather};
  std::vector<int> sps = tp == 1 ? std::vector<int>{0} : job_.moe ? std::vector<int>{1} : std::vector<int>{0, 1};
  // MoE all-to-all overlap where the shape has an all-to-all (search offers it, space.cpp)
  std::vector<bool> a2a = {false};
  if (job_.moe && ep > 1) a2a.push_back(true);
  ParallelConfig q = p.parallel;  // the job's runtime options (copy_job_runtime) with this shape
  q.tp = tp;
  q.cp = cp;
  q.ep = ep;
  q.etp = etp;
  q.micro_batch_size = mbs;
  for (int sp : sps)
    for (CpCommType cc : cps) {
      q.sp = sp != 0;
      q.cp_comm_type = cc;
      std::vector<Op> dense_ops, moe_ops, emb, head;
      std::vector<OpCost> dense_c, moe_c, emb_c, head_c;
      int eager_built = -1;
      for (auto [tsp, ov] : tpv) {
        if (tsp != sp) continue;
        // the op lists depend on the overlap only where it decides eager vs compiled pointwise ops
        // (torchtitan's async TP compiles the model, op_context): rebuilt when that changes
        q.tp_comm_overlap = ov != 0;
        const OpContext oc = op_context(p, q, prm_);
        if (int(oc.eager_pointwise) != eager_built) {
          eager_built = int(oc.eager_pointwise);
          if (dense) {
            dense_ops = layer_ops(dense_model, 0, oc), emb = embedding_ops(m, oc), head = head_ops(m, oc);
            dense_c = op_list_compute(dense_ops, v), emb_c = op_list_compute(emb, v), head_c = op_list_compute(head, v);
          }
          if (m.moe) moe_ops = layer_ops(m, first_moe, oc);
          moe_c = op_list_compute(moe_ops, v);
        }
        v.tp_comm_overlap = ov != 0;
        for (bool split : {false, true})
          for (bool a2a_ovl : a2a) {
            v.split_w = split;
            v.moe_a2a_overlap = a2a_ovl;
            if (m.moe) out.moe = min_piece(out.moe, piece_of(moe_ops, moe_c, v));
            if (a2a_ovl || !dense) continue;  // the overlap changes only lists with the MoE all-to-alls (time_op_list)
            out.dense = min_piece(out.dense, piece_of(dense_ops, dense_c, v));
            out.emb = min_piece(out.emb, piece_of(emb, emb_c, v));
            out.head = min_piece(out.head, piece_of(head, head_c, v));
          }
      }
    }
}

double structure_time_lb(const Job& job, const PipeShape& ps, const Frame& f, const std::vector<int>& zeros, const ShapeFloor& fl,
                         int64_t microbatches, double p2p_s, const std::vector<int>& moe_prefix, const CostParams& prm) {
  const ModelSpec& m = job.model();
  const int pp = ps.pp, vpp = ps.vpp;
  const double mb = double(microbatches);
  const bool mtp_moe = m.mtp_num_layers > 0 && m.is_moe_layer(m.num_layers - 1);
  thread_local std::vector<FloorPiece> ch, z3;
  thread_local std::vector<double> tail, starts, share_lb;
  thread_local std::vector<size_t> copy_of;  // the chunk whose sums an inner chunk copied (SIZE_MAX: none)
  ch.assign(size_t(pp) * vpp, FloorPiece{});
  copy_of.assign(ch.size(), SIZE_MAX);
  // an inner chunk (not the first or the last) with the last inner one's layer counts: the same sums, copied
  size_t prev = SIZE_MAX;
  for (int s = 0; s < pp; ++s)
    for (int c = 0; c < vpp; ++c) {
      size_t i = size_t(s) * vpp + c;
      int n = ps.layers[i], first = ps.first[i];
      int moe = moe_prefix[first + n] - moe_prefix[first];
      FloorPiece& t = ch[i];
      const bool inner = !(s == 0 && c == 0) && !(s == pp - 1 && c == vpp - 1);
      if (inner && prev != SIZE_MAX && ps.layers[prev] == n &&
          moe_prefix[ps.first[prev] + n] - moe_prefix[ps.first[prev]] == moe) {
        t = ch[prev];
        copy_of[i] = prev;
        continue;
      }
      if (inner) prev = i;
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
  // chunk 0's smallest share of a stage's backward work (the same at every ZeRO level)
  if (f.collectives && vpp > 1) {
    share_lb.resize(pp);
    for (int s = 0; s < pp; ++s) {
      double bw_max = 0;
      for (int c = 0; c < vpp; ++c) bw_max += ch[size_t(s) * vpp + c].BWmax;
      share_lb[s] = bw_max > 0 ? ch[size_t(s) * vpp].BWmin / bw_max : 0;
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
        t += std::max(0.0, f.grad[z][s] * share_lb[s] - c0.BWmax);
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
      auto overlapped = [&](double c, double g, int n) { return exposed_comm_s(c, g, n, prm); };
      auto same = [](double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); };
      for (size_t i = 0; i < z3.size(); ++i) {
        // a copied chunk with the same FSDP traffic as its source: the same doubles again
        const size_t j = copy_of[i];
        if (j != SIZE_MAX && same(f.fsdp_ag[i], f.fsdp_ag[j]) && same(f.fsdp_rs[i], f.fsdp_rs[j])) {
          z3[i] = z3[j];
          continue;
        }
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

double structure_time_floor(const Job& job, const PipeShape& ps, const Frame& f, const std::vector<int>& zeros,
                            const ShapeFloor& fl, int64_t microbatches) {
  const ModelSpec& m = job.model();
  const int pp = ps.pp, vpp = ps.vpp;
  const double mb = double(microbatches), mtp = m.mtp_num_layers;
  const FloorPiece& mtp_piece = mtp > 0 && m.is_moe_layer(m.num_layers - 1) ? fl.moe : fl.dense;
  double best = 0, starts = 0, chain = 0, fb_last = 0, tail0 = 0;
  for (int s = 0; s < pp; ++s) {
    // the stage's layers and those of its chunk 0, dense and MoE
    const auto [nd, nm, nd0, nm0] = ps.stage_counts[size_t(s)];
    double T = nd * fl.dense.T + nm * fl.moe.T, FB = nd * fl.dense.FB + nm * fl.moe.FB;
    double F0 = nd0 * fl.dense.F + nm0 * fl.moe.F, B0 = nd0 * fl.dense.B + nm0 * fl.moe.B;
    if (s == 0) T += fl.emb.T, FB += fl.emb.FB, F0 += fl.emb.F, B0 += fl.emb.B;
    if (s == pp - 1) {  // the last chunk holds the multi-token-prediction layers and the head
      T += mtp * mtp_piece.T + (1 + mtp) * fl.head.T;
      FB += mtp * mtp_piece.FB + (1 + mtp) * fl.head.FB;
      if (vpp == 1) {
        F0 += mtp * mtp_piece.F + (1 + mtp) * fl.head.F;
        B0 += mtp * mtp_piece.B + (1 + mtp) * fl.head.B;
      }
    }
    // every stage's tail starts with its optimizer step (structure_time_lb's tail_of)
    double tail = std::numeric_limits<double>::infinity();
    for (int z : zeros) tail = std::min(tail, f.opt[z].empty() ? 0.0 : f.opt[z][size_t(s)]);
    if (!std::isfinite(tail)) tail = 0;
    if (s == 0) tail0 = tail;
    // the stage computes every micro-batch after micro-batch 0 reached it
    best = std::max(best, starts + mb * T + tail);
    starts += F0;
    if (s < pp - 1)
      chain += F0 + B0;
    else
      fb_last = FB;
  }
  // stage 0's last backward follows micro-batch 0's forward through the pipeline, the last stage's
  // forwards and backwards and the backward's way back (structure_time_lb's chain)
  return std::max(best, chain + mb * fb_last + tail0);
}

}  // namespace mplan::planner
