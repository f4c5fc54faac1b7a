// Communication at the edges of tensor-parallel regions (Megatron-Core's mappings), by direction:
//   enter: SP shard (Nsp, C) -> full tokens (N, C) for a column-parallel GEMM
//          sp: all-gather ("gather_from_sequence_parallel_region"); else identity ("copy_to_tensor_
//          model_parallel_region") whose backward is an all-reduce
//   exit:  partial sums (N, C) of a row-parallel GEMM -> (Nsp, C)
//          sp: reduce-scatter; else all-reduce ("reduce_from_tensor_model_parallel_region")
// Tokens are sharded as contiguous blocks of the flattened (B * T) token order. Timed as
// tp_allgather / tp_reduce_scatter / tp_allreduce.
#pragma once
#include "executor/model/exec.h"

namespace mplan::exec {

Tensor tp_enter_forward(Exec& ex, const Tensor& x_sp, int64_t C);
// gradient w.r.t. the full-token tensor -> gradient w.r.t. the SP shard
Tensor tp_enter_backward(Exec& ex, Tensor dx_full, int64_t C);
Tensor tp_exit_forward(Exec& ex, Tensor partial, int64_t C);
Tensor tp_exit_backward(Exec& ex, const Tensor& dy_sp, int64_t C);

}  // namespace mplan::exec
