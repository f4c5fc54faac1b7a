// Attention block forward/backward (GQA, optional QKV bias, q/k norms, RoPE, TP/SP, CP).
#include "executor/model/attention.h"

#include <cmath>

#include "executor/parallel/cp_attention.h"
#include "executor/parallel/tp_regions.h"

namespace mplan::exec {

namespace {

int add_linear(ParamStore& ps, const std::string& name, int64_t rows, int64_t cols, ShardMap map, float stddev) {
  ParamSpec s;
  s.name = name;
  s.rows = rows;
  s.cols = cols;
  s.map = std::move(map);
  s.stddev = stddev;
  return ps.add(s);
}

int add_bias(ParamStore& ps, const std::string& name, int64_t rows, ShardMap map, bool replicated_tp, bool partial_tp,
             const LayoutDims& d) {
  ParamSpec s;
  s.name = name;
  s.rows = rows;
  s.map = std::move(map);
  s.init = InitKind::zeros;
  s.decay = false;
  s.tp_duplicate = replicated_tp && d.tp > 1;
  s.reduce_tp = replicated_tp && partial_tp && d.tp > 1;
  return ps.add(s);
}

}  // namespace

void register_attention(ParamStore& ps, const LayoutDims& d, int layer, AttnParams& p) {
  const std::string pre = "layers." + std::to_string(layer) + ".";
  const float out_std = 0.02f / std::sqrt(2.0f * float(d.num_layers));
  p.norm = register_norm(ps, d, pre + "attn_norm", d.C, d.sp);
  const int64_t qw = d.Hq * d.D, kw = d.Hkv * d.D, qwl = d.Hq_l * d.D, kwl = d.Hkv_l * d.D;
  const int64_t q0 = d.tp_rank * qwl, k0 = d.tp_rank * kwl;
  p.wq = add_linear(ps, pre + "attn.wq", qwl, d.C, ShardMap::rows(qw, d.C, q0, q0 + qwl), 0.02f);
  p.wk = add_linear(ps, pre + "attn.wk", kwl, d.C, ShardMap::rows(kw, d.C, k0, k0 + kwl), 0.02f);
  p.wv = add_linear(ps, pre + "attn.wv", kwl, d.C, ShardMap::rows(kw, d.C, k0, k0 + kwl), 0.02f);
  if (d.qkv_bias) {
    p.bq = add_bias(ps, pre + "attn.bq", qwl, ShardMap::rows(qw, 1, q0, q0 + qwl), false, false, d);
    p.bk = add_bias(ps, pre + "attn.bk", kwl, ShardMap::rows(kw, 1, k0, k0 + kwl), false, false, d);
    p.bv = add_bias(ps, pre + "attn.bv", kwl, ShardMap::rows(kw, 1, k0, k0 + kwl), false, false, d);
  }
  if (d.qk_norm) {
    p.q_norm = register_norm(ps, d, pre + "attn.q_norm", d.D, true);
    p.k_norm = register_norm(ps, d, pre + "attn.k_norm", d.D, true);
  }
  p.wo = add_linear(ps, pre + "attn.wo", d.C, qwl, ShardMap::cols(d.C, qw, q0), out_std);
  if (d.bias) p.bo = add_bias(ps, pre + "attn.bo", d.C, ShardMap::whole(d.C), true, d.sp, d);
}

Tensor attention_forward(Exec& ex, const AttnParams& p, const Micro& mb, const Tensor& x, AttnActs& a) {
  const LayoutDims& d = ex.d;
  const int64_t N = d.N, C = d.C, qwl = d.Hq_l * d.D, kwl = d.Hkv_l * d.D;
  Tensor h_sp = norm_forward(ex, "attn_norm", p.norm, x, d.Nsp, C, a.norm);
  a.h = tp_enter_forward(ex, h_sp, C);
  a.q = ex.alloc({N, qwl});
  a.k = ex.alloc({N, kwl});
  a.v = ex.alloc({N, kwl});
  {
    OpTimers::Scope t(ex.timers, "qkv_gemm");
    auto bias = [&](int b) { return b >= 0 ? ex.ps.w(b) : nullptr; };
    ex.be.matmul_forward(a.q.data(), a.h.data(), ex.ps.w(p.wq), bias(p.bq), N, C, qwl);
    ex.be.matmul_forward(a.k.data(), a.h.data(), ex.ps.w(p.wk), bias(p.bk), N, C, kwl);
    ex.be.matmul_forward(a.v.data(), a.h.data(), ex.ps.w(p.wv), bias(p.bv), N, C, kwl);
  }
  if (d.qk_norm) {  // per-head norms of q and k (Qwen3); timed with the attention norm
    a.q = norm_forward(ex, "attn_norm", p.q_norm, a.q, N * d.Hq_l, d.D, a.q_norm);
    a.k = norm_forward(ex, "attn_norm", p.k_norm, a.k, N * d.Hkv_l, d.D, a.k_norm);
  }
  if (d.rope) {
    OpTimers::Scope t(ex.timers, "rope");
    ex.be.rope_forward(a.q.data(), mb.pos.data(), N, d.Hq_l, d.D, d.rope_base);
    ex.be.rope_forward(a.k.data(), mb.pos.data(), N, d.Hkv_l, d.D, d.rope_base);
  }
  attn_core_forward(ex, mb, a.q, a.k, a.v, a.a, a.lse);
  Tensor o = ex.alloc({N, C});
  {
    OpTimers::Scope t(ex.timers, "proj_gemm");
    ex.be.matmul_forward(o.data(), a.a.data(), ex.ps.w(p.wo), nullptr, N, qwl, C);
  }
  o = tp_exit_forward(ex, std::move(o), C);
  OpTimers::Scope t(ex.timers, "attn_residual");
  if (p.bo >= 0) ex.be.add_bias(o.data(), ex.ps.w(p.bo), d.Nsp, C);
  ex.be.add(o.data(), o.data(), x.data(), d.Nsp * C);
  return o;
}

Tensor attention_backward(Exec& ex, const AttnParams& p, const Micro& mb, const Tensor& dy, AttnActs& a) {
  const LayoutDims& d = ex.d;
  const int64_t N = d.N, C = d.C, qwl = d.Hq_l * d.D, kwl = d.Hkv_l * d.D;
  Tensor dx = ex.alloc({d.Nsp, C});
  {
    OpTimers::Scope t(ex.timers, "attn_residual");
    ex.be.copy(dx.data(), dy.data(), d.Nsp * C);
    if (p.bo >= 0) ex.be.bias_backward(ex.ps.g(p.bo), dy.data(), d.Nsp, C);
  }
  Tensor dyf = tp_exit_backward(ex, dy, C);
  Tensor da = ex.alloc({N, qwl});
  linear_backward(ex, "proj_gemm", da.data(), false, dyf, dyf.data(), a.a, a.a.data(), p.wo, -1, N, qwl, C);
  Tensor dq, dk, dv;
  attn_core_backward(ex, mb, da, a.a, a.lse, a.q, a.k, a.v, dq, dk, dv);
  da = Tensor();
  if (d.rope) {
    OpTimers::Scope t(ex.timers, "rope");
    ex.be.rope_backward(dq.data(), mb.pos.data(), N, d.Hq_l, d.D, d.rope_base);
    ex.be.rope_backward(dk.data(), mb.pos.data(), N, d.Hkv_l, d.D, d.rope_base);
  }
  if (d.qk_norm) {
    Tensor dq2 = ex.alloc({N, qwl}), dk2 = ex.alloc({N, kwl});
    norm_backward(ex, "attn_norm", p.q_norm, dq.data(), a.q_norm, dq2.data(), false, N * d.Hq_l, d.D);
    norm_backward(ex, "attn_norm", p.k_norm, dk.data(), a.k_norm, dk2.data(), false, N * d.Hkv_l, d.D);
    dq = dq2;
    dk = dk2;
  }
  Tensor dh = ex.alloc({N, C});
  linear_backward(ex, "qkv_gemm", dh.data(), false, dq, dq.data(), a.h, a.h.data(), p.wq, p.bq, N, C, qwl);
  linear_backward(ex, "qkv_gemm", dh.data(), true, dk, dk.data(), a.h, a.h.data(), p.wk, p.bk, N, C, kwl);
  linear_backward(ex, "qkv_gemm", dh.data(), true, dv, dv.data(), a.h, a.h.data(), p.wv, p.bv, N, C, kwl);
  Tensor dh_sp = tp_enter_backward(ex, std::move(dh), C);
  norm_backward(ex, "attn_norm", p.norm, dh_sp.data(), a.norm, dx.data(), true, d.Nsp, C);
  return dx;
}

}  // namespace mplan::exec
