// attn_core with context parallelism: load-balanced ring attention. The sequence is cut into 2*cp
// chunks and cp rank r holds chunks r and 2cp-1-r (equal causal work per rank). Forward: K/V blocks
// travel around the cp ring (cp_kv_exchange) and each rank merges the partial softmax of its queries
// against every block. Backward: K/V travel again together with their gradient accumulators, which
// arrive back at their owner after a full turn. With cp = 1 this is plain causal attention.
#pragma once
#include "executor/model/exec.h"
#include "executor/model/micro.h"

namespace mplan::exec {

// q (N, Hq_l, D), k, v (N, Hkv_l, D) in (B, Tl, H, D) order -> a (N, Hq_l, D), lse (B, Hq_l, Tl)
void attn_core_forward(Exec& ex, const Micro& mb, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& a, Tensor& lse);
// -> dq (N, Hq_l, D), dk, dv (N, Hkv_l, D), freshly allocated
void attn_core_backward(Exec& ex, const Micro& mb, const Tensor& da, const Tensor& a, const Tensor& lse, const Tensor& q,
                        const Tensor& k, const Tensor& v, Tensor& dq, Tensor& dk, Tensor& dv);

}  // namespace mplan::exec
