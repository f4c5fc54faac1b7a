// Norm layers (LayerNorm / RMSNorm) forward and backward over the backend kernels.
#include "executor/model/norm.h"

namespace mplan::exec {

ParamSpec tp_replicated(const LayoutDims& d, const std::string& name, int64_t rows, int64_t cols, bool partial_over_tp) {
  ParamSpec s;
  s.name = name;
  s.rows = rows;
  s.cols = cols;
  s.map = ShardMap::whole(rows, cols);
  s.tp_duplicate = d.tp > 1;
  s.reduce_tp = d.tp > 1 && partial_over_tp;
  return s;
}

NormParams register_norm(ParamStore& ps, const LayoutDims& d, const std::string& name, int64_t width, bool partial_over_tp) {
  NormParams p;
  ParamSpec s = tp_replicated(d, name + ".weight", width, 1, partial_over_tp);
  s.init = InitKind::ones;
  s.decay = false;
  p.w = ps.add(s);
  if (!d.rmsnorm) {
    s.name = name + ".bias";
    s.init = InitKind::zeros;
    p.b = ps.add(s);
  }
  return p;
}

Tensor norm_forward(Exec& ex, const char* op, const NormParams& p, const Tensor& x, int64_t rows, int64_t C, NormActs& a) {
  OpTimers::Scope t(ex.timers, op);
  Tensor out = ex.alloc({rows, C});
  a.inp = x;
  a.rstd = ex.alloc({rows});
  if (ex.d.rmsnorm) {
    ex.be.rmsnorm_forward(out.data(), a.rstd.data(), x.data(), ex.ps.w(p.w), rows, C, ex.d.norm_eps);
  } else {
    a.mean = ex.alloc({rows});
    ex.be.layernorm_forward(out.data(), a.mean.data(), a.rstd.data(), x.data(), ex.ps.w(p.w), ex.ps.w(p.b), rows, C,
                            ex.d.norm_eps);
  }
  return out;
}

void norm_backward(Exec& ex, const char* op, const NormParams& p, const float* dout, NormActs& a, float* dinp, bool accumulate,
                   int64_t rows, int64_t C) {
  OpTimers::Scope t(ex.timers, op);
  if (ex.d.rmsnorm)
    ex.be.rmsnorm_backward(dinp, ex.ps.g(p.w), dout, a.inp.data(), ex.ps.w(p.w), a.rstd.data(), rows, C, accumulate);
  else
    ex.be.layernorm_backward(dinp, ex.ps.g(p.w), ex.ps.g(p.b), dout, a.inp.data(), ex.ps.w(p.w), a.mean.data(), a.rstd.data(),
                             rows, C, accumulate);
}

}  // namespace mplan::exec
