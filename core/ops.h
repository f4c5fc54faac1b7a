// The shared op vocabulary: a transformer layer (and the embedding/head/loss/optimizer around it) as
// a list of named ops with per-rank FLOPs, bytes and shapes. The simulator costs these ops, the
// executor tags its timings with the same names, and the profiler stores measurements under them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/precision.h"

namespace mplan {

enum class OpKind {
  gemm,         // dense matrix multiply (possibly grouped over local experts)
  attention,    // fused flash-style attention core
  elementwise,  // activation, rope, residual add, dropout-free pointwise work
  norm,         // LayerNorm / RMSNorm
  embedding,    // token embedding lookup
  loss,         // softmax cross-entropy
  comm,         // a collective or point-to-point transfer
  optimizer,    // AdamW update
};
std::string to_string(OpKind k);

// Collectives, with nccl-tests' bus-bandwidth factors (see collective_busbw_factor).
enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast };
std::string to_string(Collective c);
// busbw = algbw * factor(n): all_reduce 2(n-1)/n, all_gather/reduce_scatter/all_to_all (n-1)/n, else 1.
double collective_busbw_factor(Collective c, int n);

// Which parallel group a communication op runs over.
enum class CommGroup { tp, cp, ep, etp, dp, edp, pp };
std::string to_string(CommGroup g);

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;  // (m x k) @ (k x n); m = tokens
  int64_t groups = 1;           // grouped GEMM count (local experts), each of this shape
};

struct AttnShape {
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim_qk = 0, head_dim_v = 0;
  bool causal = true;
  bool triton_kernel = false;  // the 2022 FlashAttention Triton kernel (CostParams::triton_attn_eff)
};

struct Op {
  std::string name;  // vocabulary name, e.g. "qkv_gemm"
  OpKind kind = OpKind::elementwise;
  // Forward work per rank per micro-batch. Backward work is derived by the cost model:
  // gemm: dgrad = wgrad = fwd_flops; attention: bwd = 2 x fwd FLOPs (the flash recompute of the
  // scores is absorbed in the backward efficiency attn_bwd_eff);
  // memory-bound ops: bwd moves ~2x the forward bytes.
  double fwd_flops = 0;
  double fwd_bytes = 0;  // HBM bytes read + written in the forward
  GemmShape gemm;
  AttnShape attn;
  // comm ops
  Collective collective = Collective::all_reduce;
  CommGroup group = CommGroup::tp;
  double comm_bytes = 0;  // payload per rank (nccl-tests "size")
  bool in_backward_too = true;  // comm repeated (mirrored) in backward
  // activation memory this op keeps for backward, per rank per micro-batch (bytes)
  double saved_bytes = 0;
  // MoE expert ops on the busiest expert-parallel rank: the op is sized for the mean token count and
  // its time scales by this factor (OpContext::moe_load_factor); 1 elsewhere
  double load_scale = 1.0;
};

// The per-rank view of a micro-batch that op sizes depend on.
struct OpContext {
  int tp = 1, cp = 1, ep = 1, etp = 1;
  bool sp = false;
  // context-parallel exchange: "p2p" ring of K/V chunks, "a2a" (Ulysses head scatter), "allgather" of K/V
  enum class CpComm { p2p, a2a, allgather } cp_comm = CpComm::p2p;
  bool flash_attention = true;  // false: unfused QK^T / softmax / PV with the scores saved
  bool triton_attention = false;  // flash attention by the 2022 Triton kernel (same memory, slower)
  int64_t micro_batch = 1;
  int64_t seq = 1;
  Precision precision = Precision::bf16;
  // MoE: tokens the busiest expert-parallel rank receives over the mean (1 = perfectly balanced);
  // its expert GEMMs, activations and incoming all-to-all traffic scale by it.
  double moe_load_factor = 1.0;
};

// Ops of transformer layer `layer` (0-based) in execution order, forward direction.
std::vector<Op> layer_ops(const ModelSpec& m, int layer, const OpContext& c);
// Ops before the first layer (embedding) and after the last (final norm, LM head, loss).
std::vector<Op> embedding_ops(const ModelSpec& m, const OpContext& c);
std::vector<Op> head_ops(const ModelSpec& m, const OpContext& c);

// The MoE token dispatch or combine all-to-all (costed by the dispatcher model, not as a plain a2a).
inline bool is_moe_token_all_to_all(const Op& o) { return o.name == "dispatch_a2a" || o.name == "combine_a2a"; }

// Op names of the vocabulary (for validation of profile rows and per-op tables).
const std::vector<std::string>& op_vocabulary();

}  // namespace mplan
