// Stage memory accounting. Bytes per parameter (Megatron-LM, Korthikanti et al. 2022 and the
// distributed-optimizer docs): bf16/fp16 training keeps bf16 weights (2), fp32 gradients (4) and fp32
// master weights + Adam moments (12); ZeRO-1 shards the 12 over DP, ZeRO-2 also the gradients, ZeRO-3
// (FSDP) also the weights. FP8 recipes keep an extra 1-byte weight copy. fp32 training: 4 + 4 + 8.
#include "simulator/memory.h"

#include <algorithm>

#include "core/units.h"

namespace mplan {

MemoryBreakdown stage_memory(const Plan& plan, const StageWork& st, double peak_act_bytes, const CostParams& prm) {
  const ParallelConfig& p = plan.parallel;
  Precision prec = plan.training.precision;
  bool fp32 = prec == Precision::fp32;
  double wb = fp32 ? 4 : 2, gb = 4, ob = fp32 ? 8 : 12;
  if (is_fp8_family(prec)) wb += 1;
  double dp = std::max(1, p.dp()), edp = std::max(1, p.edp());
  double dense = st.dense_params, expert = st.expert_params;
  MemoryBreakdown mb;
  auto shard = [&](double bytes_per, int level) {
    return p.zero >= level ? dense * bytes_per / dp + expert * bytes_per / edp : (dense + expert) * bytes_per;
  };
  mb.weights = shard(wb, 3);
  mb.gradients = plan.training.frozen_base() ? 0 : shard(gb, 2);
  mb.optimizer = plan.training.frozen_base() ? 0 : shard(ob, 1);
  mb.activations = peak_act_bytes;
  mb.comm_buffers = prm.comm_buffer_bytes;
  if (p.zero == 3) {
    // two chunks' worth of gathered parameters in flight (current + prefetch)
    int layers = 0;
    for (const auto& c : st.chunks) layers += c.layers;
    double per_layer = layers > 0 ? (dense + expert) * wb / layers : 0;
    mb.comm_buffers += 2 * per_layer;
  } else if (p.zero == 2) {
    mb.comm_buffers += std::min((dense + expert) * gb, 2.0 * prm.comm_buffer_bytes);
  }
  double live = mb.weights + mb.gradients + mb.optimizer + mb.activations + mb.comm_buffers;
  mb.other = live * prm.allocator_overhead_frac + prm.reserved_gib * kGiB;
  mb.weights /= kGiB;
  mb.gradients /= kGiB;
  mb.optimizer /= kGiB;
  mb.activations /= kGiB;
  mb.comm_buffers /= kGiB;
  mb.other /= kGiB;
  return mb;
}

}  // namespace mplan
