// The shared op vocabulary: a transformer layer (and the embedding/head/loss/optimizer around it) as
// a list of ops with per-rank FLOPs, bytes and shapes. Each op has a typed identity (OpId: one enum,
// one name table, a count check, role traits, as ggml names its ops); the cost code, the comm events
// and the profiler switch on ids, while the names stay for output, the executor's timing tags and
// profile rows.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/activation_options.h"
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
  scan,         // a chunked state-space scan (Mamba-2 SSD): small tensor-core matmuls per chunk, fp32
                // chunk states through HBM
};
std::string to_string(OpKind k);

// Every op of the vocabulary, in the order of op_vocabulary() (the order of a layer where it has one).
// `count` is the number of ids, and the id of an Op not built from the vocabulary (a profile row's
// plain "gemm" benchmark).
enum class OpId : uint8_t {
  embedding,
  attn_norm,
  qkv_gemm,
  q_down_gemm,
  q_up_gemm,
  kv_down_gemm,
  kv_up_gemm,
  rope,
  attn_core,
  proj_gemm,
  attn_residual,
  mlp_norm,
  fc1_gemm,
  act,
  fc2_gemm,
  mlp_residual,
  router,
  permute,
  expert_fc1_gemm,
  expert_act,
  expert_fc2_gemm,
  unpermute,
  shared_fc1_gemm,
  shared_act,
  shared_fc2_gemm,
  final_norm,
  lm_head_gemm,
  cross_entropy,
  tp_allgather,
  tp_reduce_scatter,
  tp_allreduce,
  cp_kv_exchange,
  cp_a2a,
  dispatch_a2a,
  combine_a2a,
  attn_qk_gemm,
  attn_softmax,
  attn_pv_gemm,
  etp_allgather,
  etp_reduce_scatter,
  pp_send_recv,
  dp_reduce_scatter,
  dp_allreduce,
  dp_allgather,
  adamw,
  // the Mamba-2 mixer of a hybrid model's M layers (pre-norm attn_norm, residual attn_residual)
  ssm_in_gemm,    // in_proj: z, x, B, C, dt
  ssm_conv,       // depthwise causal conv1d + SiLU over x, B, C
  ssm_scan,       // the SSD chunked scan
  ssm_gate_norm,  // RMSNorm of the scan output gated by SiLU(z)
  ssm_out_gemm,   // out_proj
  // latent MoE: the projections into and out of the routed experts' width
  moe_latent_down_gemm,
  moe_latent_up_gemm,
  count
};
inline constexpr size_t kOpCount = size_t(OpId::count);

// Roles an op plays in the cost rules (bits of OpInfo::roles).
enum OpRole : uint8_t {
  kTpCollective = 1,      // a tensor-parallel region's all-gather / reduce-scatter / all-reduce
  kMoeTokenAllToAll = 2,  // the MoE token dispatch or combine (costed by the dispatcher model)
  kBf16UnderFp8 = 4,      // runs in bf16 in fp8 recipes (the output layer, the router)
  kGroupedGemm = 8,       // the grouped GEMM of the local experts (CostParams::grouped_gemm_eff)
};

struct OpInfo {
  OpId id;
  std::string_view name;
  OpKind kind;
  uint8_t roles;
};
// The entry of an id (count: a name-less "other" entry of kind elementwise and no roles).
const OpInfo& op_info(OpId id);
std::string_view op_name(OpId id);
// The id of a vocabulary name; nullopt for any other name.
std::optional<OpId> op_id(std::string_view name);
inline bool op_has_role(OpId id, OpRole r) { return (op_info(id).roles & r) != 0; }

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

// One tensor an op keeps for its backward, per rank per micro-batch, and which Megatron options remove
// it from GPU memory: recomputing a module in `dropped_by` (RecomputeModule bits) rematerialises it in
// the backward instead; offloading a module in `offloaded_by` (OffloadModule bits) moves it to host.
struct SavedTensor {
  double bytes = 0;
  uint32_t dropped_by = 0;
  uint32_t offloaded_by = 0;
};

// The tensors one op keeps (keep() in ops.cpp adds at most two): held inline, so op lists are built
// and copied without an allocation per op. More than kMax is a bug in the op vocabulary (throws).
class SavedList {
 public:
  static constexpr size_t kMax = 4;
  void push_back(const SavedTensor& t) {
    if (n_ == kMax) throw std::length_error("Op::saved holds at most 4 tensors");
    v_[n_++] = t;
  }
  SavedTensor* begin() { return v_.data(); }
  SavedTensor* end() { return v_.data() + n_; }
  const SavedTensor* begin() const { return v_.data(); }
  const SavedTensor* end() const { return v_.data() + n_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }

 private:
  std::array<SavedTensor, kMax> v_{};
  size_t n_ = 0;
};

// How the loss keeps the logits (per element of [tokens, vocab/tp]): Megatron's
// vocab_parallel_cross_entropy saves an fp32 softmax (logits.float(), exp in place); a fused
// cross-entropy writes the gradient into the bf16 logits (Transformer Engine parallel_cross_entropy,
// flash-attn's Triton CE); torch eager (torchtitan) saves an fp32 log_softmax and makes fp32 copies.
enum class LossMemory { megatron_fp32_softmax, fused_in_place, torch_eager_fp32 };

struct Op {
  OpId id = OpId::count;  // what the cost rules switch on
  std::string name;       // its vocabulary name, e.g. "qkv_gemm" (output, timing tags, profile rows)
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
  double comm_bytes = 0;        // payload per rank (nccl-tests "size")
  bool in_backward_too = true;  // comm repeated (mirrored) in backward
  // activation memory this op keeps for backward, per rank per micro-batch (bytes): the sum of `saved`
  double saved_bytes = 0;
  SavedList saved;
  // RecomputeModule bits whose recomputation re-runs this op's forward in the backward
  uint32_t rerun_by = 0;
  // working memory beyond the saved tensors while the op runs forward / backward (bytes)
  double fwd_transient_bytes = 0, bwd_transient_bytes = 0;
  // PyTorch's op-level selective activation checkpointing (torchtitan's "selective" / "op" policy:
  // outputs of matmuls - every other one -, attention and reduce-scatter are saved, the rest is
  // recomputed): the bytes this op's region keeps under that policy, and the fraction of its forward
  // the backward re-runs. Negative sac_saved_bytes: not annotated (the op keeps saved_bytes).
  double sac_saved_bytes = -1, sac_rerun_frac = 0;
  // The JAX checkpoint name of the tensor this op produces (RematTensor bit; MaxText remat policies)
  // and its bytes; 0 = unnamed (recomputed under any policy but "none").
  uint32_t remat_tensor = 0;
  double remat_bytes = 0;
  // MoE expert ops on the busiest expert-parallel rank: the op is sized for the mean token count and
  // its time scales by this factor (OpContext::moe_load_factor); 1 elsewhere
  double load_scale = 1.0;
  // attention: HBM bytes of the memory-bound work around the kernel (PyTorch ring attention's merges,
  // copies and fp32 gradient accumulation), forward and backward, timed at the HBM rate
  double side_fwd_bytes = 0, side_bwd_bytes = 0;
};

// The per-rank view of a micro-batch that op sizes depend on.
struct OpContext {
  int tp = 1, cp = 1, ep = 1, etp = 1;
  bool sp = false;
  // context-parallel exchange: "p2p" ring of K/V chunks, "a2a" (Ulysses head scatter), "allgather" of K/V
  enum class CpComm { p2p, a2a, allgather } cp_comm = CpComm::p2p;
  bool flash_attention = true;    // false: unfused QK^T / softmax / PV with the scores saved
  bool triton_attention = false;  // flash attention by the 2022 Triton kernel (same memory, slower)
  int64_t micro_batch = 1;
  int64_t seq = 1;
  // packed sequences: mean tokens per document, attention runs within each (0 = one document)
  int64_t packed_doc_tokens = 0;
  Precision precision = Precision::bf16;
  // MoE: tokens the busiest expert-parallel rank receives over the mean (1 = perfectly balanced);
  // its expert GEMMs, activations and incoming all-to-all traffic scale by it.
  double moe_load_factor = 1.0;
  LossMemory loss_memory = LossMemory::megatron_fp32_softmax;
  // torchtitan's Llama repeats K/V to all heads before SDPA (repeat_kv), so attention saves them at n_heads
  bool kv_repeated = false;
  // Eager PyTorch (torchtitan without torch.compile): every pointwise op of the block is its own
  // kernel with its own pass over memory (RMSNorm in fp32 math, complex-number RoPE, silu and the gate
  // product apart); see eager_* in ops.cpp. false: fused kernels (Transformer Engine, torch.compile, XLA).
  bool eager_pointwise = false;
  // PyTorch's ring attention (torch.distributed.tensor.experimental context_parallel, torchtitan's CP):
  // SDPA per K/V chunk with the partial outputs merged and the gradients accumulated in fp32 by eager
  // torch ops around it (see ring_merge_bytes in ops.cpp). false: the exchange's kernels fuse that work.
  bool torch_ring_attention = false;
  // Bytes per element of the activations the layers read, write and keep, where the executor's differ
  // from the precision's (0: the precision's). mplan's CUDA executor keeps fp32 tensors around its
  // bf16 GEMMs (4).
  double activation_bytes = 0;
};

// Bytes per element of a GEMM input the op saves for its backward: the activation dtype, or the
// quantized copy Transformer Engine keeps in fp8 recipes (1 B; MXFP8 +1/32 B of E8M0 scales; NVFP4
// 0.5 B + 1/16 B of scales).
double saved_gemm_input_bytes(Precision p);

// Ops of transformer layer `layer` (0-based) in execution order, forward direction.
std::vector<Op> layer_ops(const ModelSpec& m, int layer, const OpContext& c);
// Ops before the first layer (embedding) and after the last (final norm, LM head, loss).
std::vector<Op> embedding_ops(const ModelSpec& m, const OpContext& c);
std::vector<Op> head_ops(const ModelSpec& m, const OpContext& c);

// The MoE token dispatch or combine all-to-all (costed by the dispatcher model, not as a plain a2a).
inline bool is_moe_token_all_to_all(const Op& o) { return op_has_role(o.id, kMoeTokenAllToAll); }

// Op names of the vocabulary in id order (for validation of profile rows and per-op tables).
const std::vector<std::string>& op_vocabulary();

}  // namespace mplan
