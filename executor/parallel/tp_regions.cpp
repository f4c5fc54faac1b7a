// Tensor/sequence-parallel region entry and exit collectives (forward and backward).
#include "executor/parallel/tp_regions.h"

namespace mplan::exec {

Tensor tp_enter_forward(Exec& ex, const Tensor& x_sp, int64_t C) {
  if (!ex.d.sp) return x_sp;
  OpTimers::Scope t(ex.timers, "tp_allgather");
  Tensor full = ex.alloc({ex.d.N, C});
  ex.g.tp->all_gather(x_sp.data(), full.data(), ex.d.Nsp * C);
  return full;
}

Tensor tp_enter_backward(Exec& ex, Tensor dx_full, int64_t C) {
  if (ex.d.tp == 1) return dx_full;
  if (!ex.d.sp) {
    OpTimers::Scope t(ex.timers, "tp_allreduce");
    ex.g.tp->all_reduce_sum(dx_full.data(), ex.d.N * C);
    return dx_full;
  }
  OpTimers::Scope t(ex.timers, "tp_reduce_scatter");
  Tensor out = ex.alloc({ex.d.Nsp, C});
  ex.g.tp->reduce_scatter_sum(dx_full.data(), out.data(), ex.d.Nsp * C);
  return out;
}

Tensor tp_exit_forward(Exec& ex, Tensor partial, int64_t C) {
  if (ex.d.tp == 1) return partial;
  if (!ex.d.sp) {
    OpTimers::Scope t(ex.timers, "tp_allreduce");
    ex.g.tp->all_reduce_sum(partial.data(), ex.d.N * C);
    return partial;
  }
  OpTimers::Scope t(ex.timers, "tp_reduce_scatter");
  Tensor out = ex.alloc({ex.d.Nsp, C});
  ex.g.tp->reduce_scatter_sum(partial.data(), out.data(), ex.d.Nsp * C);
  return out;
}

Tensor tp_exit_backward(Exec& ex, const Tensor& dy_sp, int64_t C) {
  if (!ex.d.sp) return dy_sp;
  OpTimers::Scope t(ex.timers, "tp_allgather");
  Tensor full = ex.alloc({ex.d.N, C});
  ex.g.tp->all_gather(dy_sp.data(), full.data(), ex.d.Nsp * C);
  return full;
}

}  // namespace mplan::exec
