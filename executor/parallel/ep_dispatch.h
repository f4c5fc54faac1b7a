// Expert-parallel token exchange (Megatron's all-to-all token dispatcher with expert tensor
// parallelism). Each rank sorts its routed token copies by expert and sends them to the ep rank that
// owns the expert (dispatch_a2a, variable sizes); with etp > 1 the received rows are all-gathered
// over the etp group (etp_allgather) because every etp rank holds a slice of each local expert. The
// way back is a reduce-scatter over etp (etp_reduce_scatter) and the reverse all-to-all (combine_a2a).
#pragma once
#include <vector>

#include "executor/model/exec.h"

namespace mplan::exec {

struct EpRouting {
  std::vector<int64_t> send_rows;  // (ep) rows this rank sends to each ep peer
  std::vector<int64_t> recv_rows;  // (ep) rows received from each ep peer
  std::vector<int64_t> etp_rows;   // (etp) received rows of each etp member
  int64_t R = 0, Rr = 0, Rg = 0;   // rows sent, received, after the etp gather
  // rows of the gathered block (Rg) that belong to each local expert, in order
  std::vector<std::vector<int32_t>> expert_rows;
  std::vector<int32_t> recv_expert;  // (Rr) local expert of each received row
};

// Exchanges the per-expert counts (E values, sorted-by-expert send order) and plans the transfer.
EpRouting ep_plan(Exec& ex, const std::vector<int64_t>& count_per_expert);
// xs (R, C) sorted by expert -> rows of all local experts (Rg, C)
Tensor ep_dispatch_forward(Exec& ex, const EpRouting& r, const Tensor& xs);
// expert outputs (Rg, C) -> partial sums reduced over etp (Rr, C) (before the fc2 bias)
Tensor ep_combine_reduce(Exec& ex, const EpRouting& r, const Tensor& yg);
// (Rr, C) -> back to the sending ranks (R, C)
Tensor ep_combine_forward(Exec& ex, const EpRouting& r, const Tensor& yr);
// backward of ep_combine_forward: dys (R, C) -> (Rr, C)
Tensor ep_combine_backward(Exec& ex, const EpRouting& r, const Tensor& dys);
// backward of ep_combine_reduce: (Rr, C) -> (Rg, C)
Tensor ep_combine_reduce_backward(Exec& ex, const EpRouting& r, const Tensor& dyr);
// backward of ep_dispatch_forward: (Rg, C) -> (R, C)
Tensor ep_dispatch_backward(Exec& ex, const EpRouting& r, const Tensor& dxg);

}  // namespace mplan::exec
