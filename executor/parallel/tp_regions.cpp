// Tensor/sequence-parallel region entry and exit collectives (forward and backward).
#include "executor/parallel/tp_regions.h"

#include <utility>

namespace mplan::exec {

namespace {

// Sequence-parallel shards (Nsp, C) -> the full sequence (N, C); as is without sequence parallelism.
Tensor gather_sequence(Exec& ex, const Tensor& x_sp, int64_t C) {
  if (!ex.d.sp) return x_sp;
  OpTimers::Scope t(ex.timers, "tp_allgather");
  Tensor full = ex.alloc({ex.d.N, C});
  ex.g.tp->all_gather(x_sp.data(), full.data(), ex.d.Nsp * C);
  return full;
}

// Partial sums (N, C) of the TP ranks -> their sum: all-reduced in place, or reduce-scattered into
// sequence-parallel shards (Nsp, C).
Tensor reduce_partials(Exec& ex, Tensor partial, int64_t C) {
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

}  // namespace

Tensor tp_enter_forward(Exec& ex, const Tensor& x_sp, int64_t C) { return gather_sequence(ex, x_sp, C); }

Tensor tp_enter_backward(Exec& ex, Tensor dx_full, int64_t C) { return reduce_partials(ex, std::move(dx_full), C); }

Tensor tp_exit_forward(Exec& ex, Tensor partial, int64_t C) { return reduce_partials(ex, std::move(partial), C); }

Tensor tp_exit_backward(Exec& ex, const Tensor& dy_sp, int64_t C) { return gather_sequence(ex, dy_sp, C); }

}  // namespace mplan::exec
