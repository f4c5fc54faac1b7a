// Dense MLP block and the generic two-layer FFN shard (also used by routed and shared experts).
#include "executor/model/mlp.h"

#include <cmath>

#include "executor/parallel/tp_regions.h"

namespace mplan::exec {

FfnParams register_ffn(ParamStore& ps, const LayoutDims& d, const std::string& name, int64_t f, int parts, int part,
                       ParamClass cls) {
  FfnParams p;
  p.f_local = f / parts;
  const int64_t f0 = int64_t(part) * p.f_local, C = d.C;
  const bool gated = d.act == ActKind::swiglu;
  ParamSpec s;
  s.cls = cls;
  s.name = name + ".fc1";
  s.rows = d.fc1_rows(p.f_local);
  s.cols = C;
  s.map = ShardMap::rows(d.fc1_rows(f), C, f0, f0 + p.f_local);
  if (gated) s.map.row_ranges.emplace_back(f + f0, f + f0 + p.f_local);  // [gate_local; up_local]
  p.fc1 = ps.add(s);
  if (d.bias) {
    ParamSpec b = s;
    b.name = name + ".fc1_bias";
    b.cols = 1;
    b.map.full_cols = 1;
    b.init = InitKind::zeros;
    b.decay = false;
    p.b1 = ps.add(b);
  }
  ParamSpec s2;
  s2.cls = cls;
  s2.name = name + ".fc2";
  s2.rows = C;
  s2.cols = p.f_local;
  s2.map = ShardMap::cols(C, f, f0);
  s2.stddev = 0.02f / std::sqrt(2.0f * float(d.num_layers));
  p.fc2 = ps.add(s2);
  if (d.bias) {
    ParamSpec b;
    b.cls = cls;
    b.name = name + ".fc2_bias";
    b.rows = C;
    b.map = ShardMap::whole(C);
    b.init = InitKind::zeros;
    b.decay = false;
    // replicated over the splitting group; added after the reduction on token shards, so partial
    if (cls == ParamClass::dense) {
      b.tp_duplicate = d.tp > 1;
      b.reduce_tp = d.tp > 1 && d.sp;
    } else {
      b.etp_duplicate = d.etp > 1;
      b.reduce_etp = d.etp > 1;
    }
    p.b2 = ps.add(b);
  }
  return p;
}

Tensor ffn_forward(Exec& ex, const FfnParams& p, const Tensor& x, int64_t M, FfnActs& a, const char* fc1_op, const char* act_op,
                   const char* fc2_op) {
  const int64_t C = ex.d.C, f = p.f_local, r1 = ex.d.fc1_rows(f);
  a.inp = x;
  a.u = ex.alloc({M, r1});
  {
    OpTimers::Scope t(ex.timers, fc1_op);
    ex.be.matmul_forward(a.u.data(), x.data(), ex.ps.w(p.fc1), p.b1 >= 0 ? ex.ps.w(p.b1) : nullptr, M, C, r1);
  }
  a.g = ex.alloc({M, f});
  {
    OpTimers::Scope t(ex.timers, act_op);
    ex.be.act_forward(ex.d.act, a.g.data(), a.u.data(), M, f);
  }
  Tensor y = ex.alloc({M, C});
  OpTimers::Scope t(ex.timers, fc2_op);
  ex.be.matmul_forward(y.data(), a.g.data(), ex.ps.w(p.fc2), nullptr, M, f, C);
  return y;
}

Tensor ffn_backward(Exec& ex, const FfnParams& p, const Tensor& dy, int64_t M, FfnActs& a, const char* fc1_op, const char* act_op,
                    const char* fc2_op) {
  const int64_t C = ex.d.C, f = p.f_local, r1 = ex.d.fc1_rows(f);
  Tensor dg = ex.alloc({M, f});
  linear_backward(ex, fc2_op, dg.data(), false, dy, dy.data(), a.g, a.g.data(), p.fc2, -1, M, f, C);
  Tensor du = ex.alloc({M, r1});
  {
    OpTimers::Scope t(ex.timers, act_op);
    ex.be.act_backward(ex.d.act, du.data(), dg.data(), a.u.data(), M, f);
  }
  Tensor dx = ex.alloc({M, C});
  linear_backward(ex, fc1_op, dx.data(), false, du, du.data(), a.inp, a.inp.data(), p.fc1, p.b1, M, C, r1);
  return dx;
}

void register_mlp(ParamStore& ps, const LayoutDims& d, int layer, MlpParams& p) {
  const std::string pre = "layers." + std::to_string(layer) + ".";
  p.norm = register_norm(ps, d, pre + "mlp_norm", d.C, d.sp);
  p.ffn = register_ffn(ps, d, pre + "mlp", d.F, d.tp, d.tp_rank, ParamClass::dense);
}

Tensor mlp_forward(Exec& ex, const MlpParams& p, const Tensor& x, MlpActs& a) {
  const LayoutDims& d = ex.d;
  Tensor h_sp = norm_forward(ex, "mlp_norm", p.norm, x, d.Nsp, d.C, a.norm);
  Tensor h = tp_enter_forward(ex, h_sp, d.C);
  Tensor y = ffn_forward(ex, p.ffn, h, d.N, a.ffn, "fc1_gemm", "act", "fc2_gemm");
  y = tp_exit_forward(ex, std::move(y), d.C);
  OpTimers::Scope t(ex.timers, "mlp_residual");
  if (p.ffn.b2 >= 0) ex.be.add_bias(y.data(), ex.ps.w(p.ffn.b2), d.Nsp, d.C);
  ex.be.add(y.data(), y.data(), x.data(), d.Nsp * d.C);
  return y;
}

Tensor mlp_backward(Exec& ex, const MlpParams& p, const Tensor& dy, MlpActs& a) {
  const LayoutDims& d = ex.d;
  Tensor dx = ex.alloc({d.Nsp, d.C});
  {
    OpTimers::Scope t(ex.timers, "mlp_residual");
    ex.be.copy(dx.data(), dy.data(), d.Nsp * d.C);
    if (p.ffn.b2 >= 0) ex.be.bias_backward(ex.ps.g(p.ffn.b2), dy.data(), d.Nsp, d.C);
  }
  Tensor dyf = tp_exit_backward(ex, dy, d.C);
  Tensor dh = ffn_backward(ex, p.ffn, dyf, d.N, a.ffn, "fc1_gemm", "act", "fc2_gemm");
  Tensor dh_sp = tp_enter_backward(ex, std::move(dh), d.C);
  norm_backward(ex, "mlp_norm", p.norm, dh_sp.data(), a.norm, dx.data(), true, d.Nsp, d.C);
  return dx;
}

}  // namespace mplan::exec
