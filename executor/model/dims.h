// LayoutDims: every size one rank needs, derived from ModelSpec + ParallelConfig + TrainingSpec and
// the rank's coordinates: model widths, their TP/EP/ETP shards, tokens per micro-batch in the
// tensor-parallel region (N = mbs * seq / cp) and in the sequence-parallel region (Nsp = N / tp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/rank_grid.h"
#include "executor/backend/backend.h"

namespace mplan::exec {

struct LayoutDims {
  // model
  int64_t C = 0, V = 0, F = 0, Hq = 0, Hkv = 0, D = 0;
  int64_t E = 0, topk = 0, Fe = 0, Fs = 0;  // experts, routed top-k, expert / shared-expert FFN widths
  int num_layers = 0;
  ActKind act = ActKind::gelu;
  bool rmsnorm = false, tied = true, learned_pos = false, rope = false, bias = false, qkv_bias = false, qk_norm = false;
  int64_t max_pos = 0;
  float norm_eps = 1e-5f;
  float rope_base = 10000.0f;
  float moe_aux_coeff = 1e-2f;       // load-balancing loss weight (Switch Transformer form)
  float moe_capacity_factor = 0.0f;  // 0 = dropless; else per-rank expert capacity with token dropping
  // layout
  int tp = 1, tp_rank = 0, cp = 1, cp_rank = 0, dp = 1, dp_rank = 0, pp = 1, pp_rank = 0, vpp = 1;
  int ep = 1, ep_rank = 0, etp = 1, etp_rank = 0, edp = 1;
  bool sp = false;
  int zero = 1;
  // batch
  int64_t B = 1, S = 1;      // micro-batch (sequences) and sequence length
  int64_t Tl = 1;            // tokens of one sequence on this rank (S / cp: two load-balanced chunks)
  int64_t N = 1;             // tokens per micro-batch in the TP region (B * Tl)
  int64_t Nsp = 1;           // tokens in the SP region (N / tp with sp, else N)
  int64_t gbs = 1;           // global batch (sequences)
  int64_t microbatches = 1;  // per DP rank
  // per-rank shards
  int64_t Hq_l = 0, Hkv_l = 0, F_l = 0, Fs_l = 0, Fe_l = 0;
  int64_t Vpad = 0, V_l = 0, vstart = 0, v_valid = 0;  // vocabulary shard (padded to a multiple of tp)
  int64_t E_l = 0, e_first = 0;                        // local experts

  int64_t fc1_rows(int64_t f) const { return act == ActKind::swiglu ? 2 * f : f; }
  // Global positions of this rank's Tl tokens of a sequence (cp rank r holds chunks r and 2cp-1-r).
  std::vector<int32_t> local_positions(int cp_rank_of) const;
};

LayoutDims make_layout_dims(const Plan& plan, const RankCoord& coord);

// Model features this executor cannot train, as messages (empty = trainable).
std::vector<std::string> unsupported_features(const Plan& plan);

}  // namespace mplan::exec
