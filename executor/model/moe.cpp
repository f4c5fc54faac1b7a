// MoE block forward/backward: top-k router with load-balancing loss and optional capacity, token
// permutation, expert-parallel dispatch/combine, expert MLPs (etp shards), shared expert.
#include "executor/model/moe.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "executor/parallel/tp_regions.h"

namespace mplan::exec {

void register_moe(ParamStore& ps, const LayoutDims& d, int layer, MoeParams& p) {
  const std::string pre = "layers." + std::to_string(layer) + ".";
  p.norm = register_norm(ps, d, pre + "mlp_norm", d.C, d.sp);
  ParamSpec r = tp_replicated(d, pre + "router.weight", d.E, d.C, d.sp);
  p.router = ps.add(r);
  if (d.bias) {
    r.name = pre + "router.bias";
    r.cols = 1;
    r.map = ShardMap::whole(d.E);
    r.init = InitKind::zeros;
    r.decay = false;
    p.router_bias = ps.add(r);
  }
  for (int64_t i = 0; i < d.E_l; ++i)
    p.experts.push_back(
        register_ffn(ps, d, pre + "experts." + std::to_string(d.e_first + i), d.Fe, d.etp, d.etp_rank, ParamClass::expert));
  if (d.Fs > 0) p.shared = register_ffn(ps, d, pre + "shared", d.Fs, d.tp, d.tp_rank, ParamClass::dense);
}

namespace {

// Router: logits -> probs, top-k choice; load-balancing statistics over the micro-batch.
void route(Exec& ex, const MoeParams& p, MoeActs& a) {
  const LayoutDims& d = ex.d;
  const int64_t Nsp = d.Nsp, E = d.E, k = d.topk;
  OpTimers::Scope t(ex.timers, "router");
  Tensor logits = ex.alloc({Nsp, E});
  ex.be.matmul_forward(logits.data(), a.h.data(), ex.ps.w(p.router), p.router_bias >= 0 ? ex.ps.w(p.router_bias) : nullptr, Nsp,
                       d.C, E);
  a.probs = ex.alloc({Nsp, E});
  a.weights = ex.alloc({Nsp, k});
  a.idx.assign(size_t(Nsp * k), 0);
  ex.be.moe_route_forward(a.probs.data(), a.idx.data(), a.weights.data(), logits.data(), Nsp, E, k);
  // aux = coeff * E / (k * Ntot^2) * sum_e count_e * sum_t p_te   (Switch Transformer)
  std::vector<double> stat(size_t(2 * E + 1), 0.0);
  for (int64_t i = 0; i < Nsp * k; ++i) stat[size_t(a.idx[size_t(i)])] += 1;
  std::vector<float> pr(size_t(Nsp * E));
  ex.be.download(pr.data(), a.probs.data(), Nsp * E);
  for (int64_t n = 0; n < Nsp; ++n)
    for (int64_t e = 0; e < E; ++e) stat[size_t(E + e)] += pr[n * E + e];
  stat[size_t(2 * E)] = double(Nsp);
  ex.g.tp_cp->all_reduce_sum(stat.data(), int64_t(stat.size()));
  const int64_t micro_batches_total = d.gbs / d.B;  // exact: gbs is a multiple of mbs*dp (validate_parallel)
  const double ntot = stat[size_t(2 * E)], micro_total = double(micro_batches_total);
  const double c = double(d.moe_aux_coeff) * double(E) / (double(k) * ntot * ntot);
  double aux = 0;
  a.aux_grad.assign(size_t(E), 0.0);
  for (int64_t e = 0; e < E; ++e) {
    aux += c * stat[size_t(e)] * stat[size_t(E + e)];
    a.aux_grad[size_t(e)] = c * stat[size_t(e)] / micro_total;
  }
  if (ex.aux_loss && !ex.recomputing && d.tp_rank == 0 && d.cp_rank == 0) *ex.aux_loss += aux / micro_total;
}

// Sorts the routed copies by expert, dropping beyond capacity when a capacity factor is set.
std::vector<int64_t> permute_plan(Exec& ex, MoeActs& a) {
  const LayoutDims& d = ex.d;
  const int64_t Nsp = d.Nsp, E = d.E, k = d.topk;
  std::vector<std::vector<int32_t>> lists(static_cast<size_t>(E));
  for (int64_t i = 0; i < Nsp * k; ++i) lists[size_t(a.idx[size_t(i)])].push_back(int32_t(i));
  if (d.moe_capacity_factor > 0) {
    const size_t cap = size_t(std::ceil(double(d.moe_capacity_factor) * double(Nsp * k) / double(E)));
    std::vector<float> w(size_t(Nsp * k));
    ex.be.download(w.data(), a.weights.data(), Nsp * k);
    for (auto& l : lists) {
      if (l.size() <= cap) continue;
      std::stable_sort(l.begin(), l.end(), [&](int32_t x, int32_t y) { return w[x] > w[y]; });
      l.resize(cap);
      std::sort(l.begin(), l.end());
    }
  }
  std::vector<int64_t> cnt(static_cast<size_t>(E));
  a.src_row.clear();
  a.assign.clear();
  for (int64_t e = 0; e < E; ++e) {
    cnt[size_t(e)] = int64_t(lists[size_t(e)].size());
    for (int32_t i : lists[size_t(e)]) {
      a.assign.push_back(i);
      a.src_row.push_back(int32_t(i / k));
    }
  }
  a.row_w = ex.alloc({int64_t(a.assign.size())});
  std::vector<float> weights(size_t(Nsp * k)), row_w(a.assign.size());
  ex.be.download(weights.data(), a.weights.data(), Nsp * k);
  for (size_t r = 0; r < a.assign.size(); ++r) row_w[r] = weights[size_t(a.assign[r])];
  ex.be.upload(a.row_w.data(), row_w.data(), int64_t(row_w.size()));
  return cnt;
}

// Runs each local expert i on its rows of `in` (Rg, C), gathered under the timer `gather_op`, with
// run(i, rows (M, C), M) and adds what it returns into the same rows of `out` under `scatter_op`.
template <class Run>
void for_each_expert(Exec& ex, const MoeActs& a, size_t experts, const Tensor& in, Tensor& out, const char* gather_op,
                     const char* scatter_op, Run run) {
  const int64_t C = ex.d.C;
  for (size_t i = 0; i < experts; ++i) {
    const std::vector<int32_t>& rows = a.route.expert_rows[i];
    const int64_t M = int64_t(rows.size());
    Tensor xe = ex.alloc({M, C});
    {
      OpTimers::Scope t(ex.timers, gather_op);
      ex.be.gather_rows(xe.data(), in.data(), rows.data(), M, C);
    }
    Tensor ye = run(i, xe, M);
    OpTimers::Scope t(ex.timers, scatter_op);
    ex.be.scatter_add_rows(out.data(), ye.data(), rows.data(), nullptr, M, C);
  }
}

}  // namespace

Tensor moe_forward(Exec& ex, const MoeParams& p, const Tensor& x, MoeActs& a) {
  const LayoutDims& d = ex.d;
  const int64_t Nsp = d.Nsp, C = d.C;
  a.h = norm_forward(ex, "mlp_norm", p.norm, x, Nsp, C, a.norm);
  route(ex, p, a);
  Tensor xs;
  std::vector<int64_t> cnt;
  {
    OpTimers::Scope t(ex.timers, "permute");
    cnt = permute_plan(ex, a);
    xs = ex.alloc({int64_t(a.src_row.size()), C});
    ex.be.gather_rows(xs.data(), a.h.data(), a.src_row.data(), int64_t(a.src_row.size()), C);
  }
  a.route = ep_plan(ex, cnt);
  Tensor xg = ep_dispatch_forward(ex, a.route, xs);
  Tensor yg = ex.alloc({a.route.Rg, C});
  a.expert.assign(p.experts.size(), FfnActs());
  for_each_expert(ex, a, p.experts.size(), xg, yg, "permute", "unpermute", [&](size_t i, const Tensor& xe, int64_t M) {
    return ffn_forward(ex, p.experts[i], xe, M, a.expert[i], "expert_fc1_gemm", "expert_act", "expert_fc2_gemm");
  });
  Tensor yr = ep_combine_reduce(ex, a.route, yg);
  if (!p.experts.empty() && p.experts[0].b2 >= 0) {
    OpTimers::Scope t(ex.timers, "expert_fc2_gemm");
    for (int64_t r = 0; r < a.route.Rr; ++r)
      ex.be.add_bias(yr.data() + r * C, ex.ps.w(p.experts[size_t(a.route.recv_expert[size_t(r)])].b2), 1, C);
  }
  a.ys = ep_combine_forward(ex, a.route, yr);
  Tensor y = ex.alloc({Nsp, C});
  {
    OpTimers::Scope t(ex.timers, "unpermute");
    ex.be.scatter_add_rows(y.data(), a.ys.data(), a.src_row.data(), a.row_w.data(), int64_t(a.src_row.size()), C);
  }
  if (p.shared.fc1 >= 0) {
    Tensor hs = tp_enter_forward(ex, a.h, C);
    Tensor ysh = ffn_forward(ex, p.shared, hs, d.N, a.shared, "shared_fc1_gemm", "shared_act", "shared_fc2_gemm");
    ysh = tp_exit_forward(ex, std::move(ysh), C);
    OpTimers::Scope t(ex.timers, "shared_fc2_gemm");
    if (p.shared.b2 >= 0) ex.be.add_bias(ysh.data(), ex.ps.w(p.shared.b2), Nsp, C);
    ex.be.accumulate(y.data(), ysh.data(), Nsp * C);
  }
  OpTimers::Scope t(ex.timers, "mlp_residual");
  ex.be.add(y.data(), y.data(), x.data(), Nsp * C);
  return y;
}

Tensor moe_backward(Exec& ex, const MoeParams& p, const Tensor& dy, MoeActs& a) {
  const LayoutDims& d = ex.d;
  const int64_t Nsp = d.Nsp, C = d.C, E = d.E, k = d.topk, R = int64_t(a.src_row.size());
  Tensor dx = ex.alloc({Nsp, C});
  {
    OpTimers::Scope t(ex.timers, "mlp_residual");
    ex.be.copy(dx.data(), dy.data(), Nsp * C);
  }
  Tensor dh = ex.alloc({Nsp, C});
  if (p.shared.fc1 >= 0) {
    if (p.shared.b2 >= 0) {
      OpTimers::Scope t(ex.timers, "shared_fc2_gemm");
      ex.be.bias_backward(ex.ps.g(p.shared.b2), dy.data(), Nsp, C);
    }
    Tensor dys = tp_exit_backward(ex, dy, C);
    Tensor dhs = ffn_backward(ex, p.shared, dys, d.N, a.shared, "shared_fc1_gemm", "shared_act", "shared_fc2_gemm");
    dhs = tp_enter_backward(ex, std::move(dhs), C);
    ex.be.accumulate(dh.data(), dhs.data(), Nsp * C);
  }
  Tensor drows = ex.alloc({R, C}), dw_rows = ex.alloc({R});
  {
    OpTimers::Scope t(ex.timers, "unpermute");
    ex.be.gather_rows(drows.data(), dy.data(), a.src_row.data(), R, C);
    ex.be.row_dot(dw_rows.data(), drows.data(), a.ys.data(), R, C);
    ex.be.scale_rows(drows.data(), a.row_w.data(), R, C);
  }
  Tensor dyr = ep_combine_backward(ex, a.route, drows);
  if (!p.experts.empty() && p.experts[0].b2 >= 0) {
    OpTimers::Scope t(ex.timers, "expert_fc2_gemm");
    for (int64_t r = 0; r < a.route.Rr; ++r)
      ex.be.bias_backward(ex.ps.g(p.experts[size_t(a.route.recv_expert[size_t(r)])].b2), dyr.data() + r * C, 1, C);
  }
  Tensor dyg = ep_combine_reduce_backward(ex, a.route, dyr);
  Tensor dxg = ex.alloc({a.route.Rg, C});
  for_each_expert(ex, a, p.experts.size(), dyg, dxg, "unpermute", "permute", [&](size_t i, const Tensor& dye, int64_t M) {
    return ffn_backward(ex, p.experts[i], dye, M, a.expert[i], "expert_fc1_gemm", "expert_act", "expert_fc2_gemm");
  });
  Tensor dxs = ep_dispatch_backward(ex, a.route, dxg);
  {
    OpTimers::Scope t(ex.timers, "permute");
    ex.be.scatter_add_rows(dh.data(), dxs.data(), a.src_row.data(), nullptr, R, C);
  }
  Tensor dlogits = ex.alloc({Nsp, E});
  {
    OpTimers::Scope t(ex.timers, "router");
    Tensor dweights = ex.alloc({Nsp, k}), dprobs = ex.alloc({Nsp, E});
    std::vector<float> dw(static_cast<size_t>(R)), dwk(static_cast<size_t>(Nsp * k), 0.0f), dp(static_cast<size_t>(Nsp * E));
    ex.be.download(dw.data(), dw_rows.data(), R);
    for (int64_t r = 0; r < R; ++r) dwk[size_t(a.assign[size_t(r)])] = dw[size_t(r)];
    for (int64_t n = 0; n < Nsp; ++n)
      for (int64_t e = 0; e < E; ++e) dp[size_t(n * E + e)] = float(a.aux_grad[size_t(e)]);
    ex.be.upload(dweights.data(), dwk.data(), Nsp * k);
    ex.be.upload(dprobs.data(), dp.data(), Nsp * E);
    ex.be.moe_route_backward(dlogits.data(), dweights.data(), dprobs.data(), a.probs.data(), a.idx.data(), a.weights.data(), Nsp,
                             E, k);
  }
  linear_backward(ex, "router", dh.data(), true, dlogits, dlogits.data(), a.h, a.h.data(), p.router, p.router_bias, Nsp, C, E);
  norm_backward(ex, "mlp_norm", p.norm, dh.data(), a.norm, dx.data(), true, Nsp, C);
  return dx;
}

}  // namespace mplan::exec
