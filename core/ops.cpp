// Op lists of a layer (a transformer layer, or a hybrid model's Mamba, attention, MLP or MoE layer),
// the embedding and the head, per rank and micro-batch.
// Tokens per rank: T = b*s/cp inside tensor-parallel regions, T/tp in sequence-parallel regions.
// Saved-activation sizes follow Korthikanti et al. 2022 (without dropout masks), with flash attention
// keeping Q, K, V and the softmax statistics instead of the s x s scores.
#include "core/ops.h"

#include <iterator>

namespace mplan {

std::string to_string(OpKind k) {
  switch (k) {
    case OpKind::gemm:
      return "gemm";
    case OpKind::attention:
      return "attention";
    case OpKind::elementwise:
      return "elementwise";
    case OpKind::norm:
      return "norm";
    case OpKind::embedding:
      return "embedding";
    case OpKind::loss:
      return "loss";
    case OpKind::comm:
      return "comm";
    case OpKind::optimizer:
      return "optimizer";
    case OpKind::scan:
      return "scan";
  }
  return "?";
}

std::string to_string(Collective c) {
  switch (c) {
    case Collective::all_reduce:
      return "all_reduce";
    case Collective::all_gather:
      return "all_gather";
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::all_to_all:
      return "all_to_all";
    case Collective::send_recv:
      return "send_recv";
    case Collective::broadcast:
      return "broadcast";
  }
  return "?";
}

double collective_busbw_factor(Collective c, int n) {
  if (n <= 1) return 0;
  switch (c) {
    case Collective::all_reduce:
      return 2.0 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
      return double(n - 1) / n;
    default:
      return 1.0;
  }
}

std::string to_string(CommGroup g) {
  switch (g) {
    case CommGroup::tp:
      return "tp";
    case CommGroup::cp:
      return "cp";
    case CommGroup::ep:
      return "ep";
    case CommGroup::etp:
      return "etp";
    case CommGroup::dp:
      return "dp";
    case CommGroup::edp:
      return "edp";
    case CommGroup::pp:
      return "pp";
  }
  return "?";
}

namespace {

constexpr uint8_t kNoRole = 0;
// The one table of the vocabulary: id, name, kind, roles (in id order; checked below).
constexpr OpInfo kOps[] = {
    {OpId::embedding, "embedding", OpKind::embedding, kNoRole},
    {OpId::attn_norm, "attn_norm", OpKind::norm, kNoRole},
    {OpId::qkv_gemm, "qkv_gemm", OpKind::gemm, kNoRole},
    {OpId::q_down_gemm, "q_down_gemm", OpKind::gemm, kNoRole},
    {OpId::q_up_gemm, "q_up_gemm", OpKind::gemm, kNoRole},
    {OpId::kv_down_gemm, "kv_down_gemm", OpKind::gemm, kNoRole},
    {OpId::kv_up_gemm, "kv_up_gemm", OpKind::gemm, kNoRole},
    {OpId::rope, "rope", OpKind::elementwise, kNoRole},
    {OpId::attn_core, "attn_core", OpKind::attention, kNoRole},
    {OpId::proj_gemm, "proj_gemm", OpKind::gemm, kNoRole},
    {OpId::attn_residual, "attn_residual", OpKind::elementwise, kNoRole},
    {OpId::mlp_norm, "mlp_norm", OpKind::norm, kNoRole},
    {OpId::fc1_gemm, "fc1_gemm", OpKind::gemm, kNoRole},
    {OpId::act, "act", OpKind::elementwise, kNoRole},
    {OpId::fc2_gemm, "fc2_gemm", OpKind::gemm, kNoRole},
    {OpId::mlp_residual, "mlp_residual", OpKind::elementwise, kNoRole},
    {OpId::router, "router", OpKind::gemm, kBf16UnderFp8},
    {OpId::permute, "permute", OpKind::elementwise, kNoRole},
    {OpId::expert_fc1_gemm, "expert_fc1_gemm", OpKind::gemm, kGroupedGemm},
    {OpId::expert_act, "expert_act", OpKind::elementwise, kNoRole},
    {OpId::expert_fc2_gemm, "expert_fc2_gemm", OpKind::gemm, kGroupedGemm},
    {OpId::unpermute, "unpermute", OpKind::elementwise, kNoRole},
    {OpId::shared_fc1_gemm, "shared_fc1_gemm", OpKind::gemm, kNoRole},
    {OpId::shared_act, "shared_act", OpKind::elementwise, kNoRole},
    {OpId::shared_fc2_gemm, "shared_fc2_gemm", OpKind::gemm, kNoRole},
    {OpId::final_norm, "final_norm", OpKind::norm, kNoRole},
    {OpId::lm_head_gemm, "lm_head_gemm", OpKind::gemm, kBf16UnderFp8},
    {OpId::cross_entropy, "cross_entropy", OpKind::loss, kNoRole},
    {OpId::tp_allgather, "tp_allgather", OpKind::comm, kTpCollective},
    {OpId::tp_reduce_scatter, "tp_reduce_scatter", OpKind::comm, kTpCollective},
    {OpId::tp_allreduce, "tp_allreduce", OpKind::comm, kTpCollective},
    {OpId::cp_kv_exchange, "cp_kv_exchange", OpKind::comm, kNoRole},
    {OpId::cp_a2a, "cp_a2a", OpKind::comm, kNoRole},
    {OpId::dispatch_a2a, "dispatch_a2a", OpKind::comm, kMoeTokenAllToAll},
    {OpId::combine_a2a, "combine_a2a", OpKind::comm, kMoeTokenAllToAll},
    {OpId::attn_qk_gemm, "attn_qk_gemm", OpKind::gemm, kNoRole},
    {OpId::attn_softmax, "attn_softmax", OpKind::elementwise, kNoRole},
    {OpId::attn_pv_gemm, "attn_pv_gemm", OpKind::gemm, kNoRole},
    {OpId::etp_allgather, "etp_allgather", OpKind::comm, kNoRole},
    {OpId::etp_reduce_scatter, "etp_reduce_scatter", OpKind::comm, kNoRole},
    {OpId::pp_send_recv, "pp_send_recv", OpKind::comm, kNoRole},
    {OpId::dp_reduce_scatter, "dp_reduce_scatter", OpKind::comm, kNoRole},
    {OpId::dp_allreduce, "dp_allreduce", OpKind::comm, kNoRole},
    {OpId::dp_allgather, "dp_allgather", OpKind::comm, kNoRole},
    {OpId::adamw, "adamw", OpKind::optimizer, kNoRole},
    {OpId::ssm_in_gemm, "ssm_in_gemm", OpKind::gemm, kNoRole},
    {OpId::ssm_conv, "ssm_conv", OpKind::elementwise, kNoRole},
    {OpId::ssm_scan, "ssm_scan", OpKind::scan, kNoRole},
    {OpId::ssm_gate_norm, "ssm_gate_norm", OpKind::norm, kNoRole},
    {OpId::ssm_out_gemm, "ssm_out_gemm", OpKind::gemm, kNoRole},
    {OpId::moe_latent_down_gemm, "moe_latent_down_gemm", OpKind::gemm, kNoRole},
    {OpId::moe_latent_up_gemm, "moe_latent_up_gemm", OpKind::gemm, kNoRole},
};
static_assert(std::size(kOps) == kOpCount, "one kOps entry per OpId");
constexpr bool in_id_order() {
  for (size_t i = 0; i < std::size(kOps); ++i)
    if (size_t(kOps[i].id) != i) return false;
  return true;
}
static_assert(in_id_order(), "kOps lists the ids in enum order");
constexpr OpInfo kOther = {OpId::count, "", OpKind::elementwise, kNoRole};

}  // namespace

const OpInfo& op_info(OpId id) { return size_t(id) < kOpCount ? kOps[size_t(id)] : kOther; }

std::string_view op_name(OpId id) { return op_info(id).name; }

std::optional<OpId> op_id(std::string_view name) {
  for (const OpInfo& o : kOps)
    if (o.name == name) return o.id;
  return std::nullopt;
}

const std::vector<std::string>& op_vocabulary() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> names;
    for (const OpInfo& o : kOps) names.emplace_back(o.name);
    return names;
  }();
  return v;
}

namespace {

struct Dims {
  double T;    // tokens per rank in TP regions (b*s/cp)
  double Tsp;  // tokens per rank in SP regions
  double a;    // bytes per activation element
  double g;    // bytes per element of a saved GEMM input (quantized in fp8 recipes)
  double b, sq, skv;
  bool eager;  // OpContext::eager_pointwise
};

Dims dims(const OpContext& c) {
  Dims d;
  d.b = double(c.micro_batch);
  d.sq = double(c.seq) / c.cp;
  d.skv = double(c.seq);
  d.T = d.b * d.sq;
  d.Tsp = c.sp ? d.T / c.tp : d.T;
  d.a = c.activation_bytes > 0 ? c.activation_bytes : activation_bytes(c.precision);
  d.g = c.activation_bytes > 0 ? c.activation_bytes : saved_gemm_input_bytes(c.precision);
  d.eager = c.eager_pointwise;
  return d;
}

// HBM bytes per element of the pointwise ops, forward, for activations of `a` bytes. Fused (one
// kernel): read the input, write the output. Eager PyTorch runs torchtitan's Llama code
// (torchtitan@9dec370 models/norms.py RMSNorm, models/llama/model.py apply_rotary_emb and
// FeedForward) one kernel per op:
//  - RMSNorm `(x.float() * rsqrt(x.float().pow(2).mean(-1) + eps)).type_as(x) * weight`:
//    x.float() a+4, pow 4+4, mean 4, the product 4+4, type_as 4+a, the weight product a+a = 28 + 4a;
//  - RoPE `view_as_complex(x.float()) * freqs_cis`, view_as_real, type_as: a+4, 4+4, 4+a = 16 + 2a
//    per element of q and k;
//  - SwiGLU `silu(w1 x) * w3 x`: silu a+a, the product 2a+a = 5a per element of the hidden width
//    (fused: 2a in, a out = 3a).
double norm_bytes_per_elem(const Dims& d) { return d.eager ? 28 + 4 * d.a : 2 * d.a; }
double rope_bytes_per_elem(const Dims& d) { return d.eager ? 16 + 2 * d.a : 2 * d.a; }
double act_bytes_per_elem(const Dims& d, double gate) { return gate > 1 && d.eager ? 5 * d.a : (gate + 1) * d.a; }

constexpr uint32_t bit(RecomputeModule m) { return uint32_t(m); }
constexpr uint32_t bit(OffloadModule m) { return uint32_t(m); }

// Records a tensor the op keeps for its backward.
Op& keep(Op& o, double bytes, uint32_t dropped_by = 0, uint32_t offloaded_by = 0) {
  if (bytes <= 0) return o;
  o.saved.push_back({bytes, dropped_by, offloaded_by});
  o.saved_bytes += bytes;
  return o;
}

// An op of the vocabulary: its id, name and kind from the table.
Op vocabulary_op(OpId id) {
  Op o;
  o.id = id;
  o.name = std::string(op_name(id));
  o.kind = op_info(id).kind;
  return o;
}

Op gemm(OpId id, double m, double n, double k, double a, int64_t groups = 1) {
  Op o = vocabulary_op(id);
  o.gemm = {int64_t(m), int64_t(n), int64_t(k), groups};
  o.fwd_flops = 2.0 * m * n * k * double(groups);
  o.fwd_bytes = a * double(groups) * (m * k + k * n + m * n);
  // backward: the output gradient and the input gradient are alive together
  o.bwd_transient_bytes = a * double(groups) * m * (n + k);
  return o;
}

Op mem_op(OpId id, double bytes, double flops) {
  Op o = vocabulary_op(id);
  o.fwd_bytes = bytes;
  o.fwd_flops = flops;
  return o;
}

Op comm(OpId id, Collective coll, CommGroup g, double bytes) {
  Op o = vocabulary_op(id);
  o.collective = coll;
  o.group = g;
  o.comm_bytes = bytes;
  return o;
}

// Annotates an op for torch's op-level selective checkpointing (see Op::sac_saved_bytes).
Op& sac(Op& o, double kept, double rerun_frac) {
  o.sac_saved_bytes = kept;
  o.sac_rerun_frac = rerun_frac;
  return o;
}

// Names the tensor an op produces for JAX remat policies (see Op::remat_tensor).
Op& named(Op& o, RematTensor t, double bytes) {
  o.remat_tensor = uint32_t(t);
  o.remat_bytes = bytes;
  return o;
}

Op rerun(Op o, uint32_t modules) {
  o.rerun_by |= modules;
  return o;
}

// TP entry/exit collectives around a column->row parallel pair (re-run with `modules`).
void tp_enter(std::vector<Op>& ops, const OpContext& c, const Dims& d, double width, uint32_t modules = 0) {
  if (c.tp > 1 && c.sp)
    ops.push_back(rerun(comm(OpId::tp_allgather, Collective::all_gather, CommGroup::tp, d.T * width * d.a), modules));
}
void tp_exit(std::vector<Op>& ops, const OpContext& c, const Dims& d, double width, uint32_t modules = 0) {
  if (c.tp <= 1) return;
  if (c.sp)
    ops.push_back(rerun(comm(OpId::tp_reduce_scatter, Collective::reduce_scatter, CommGroup::tp, d.T * width * d.a), modules));
  else
    ops.push_back(rerun(comm(OpId::tp_allreduce, Collective::all_reduce, CommGroup::tp, d.T * width * d.a), modules));
}

// PyTorch's ring attention (torch/distributed/tensor/experimental/_attention.py, the one torchtitan's
// CP runs; counted at pytorch@0123248): eager torch ops around each chunk's SDPA call, on the rank whose
// every step after the first uses its full local query (the slowest; round-robin load balance).
// E = output elements, kv = K + V elements as SDPA sees them, a = activation bytes, cp steps.
// Forward: K/V .contiguous() and a torch.cat of them per exchange, each step's output upcast to fp32,
// the merge out - sigmoid(lse_b - lse) * (out - block_out) (three fp32 passes, 32 B per element) for
// every step after the first, the cast back. Backward: zeroed fp32 dQ/dK/dV, the K/V cat per exchange,
// dK/dV accumulated in fp32 (later steps add into one half, then torch.cat the whole), dQ accumulated
// every step, the fp32 dK/dV cat for the rotation every step, the casts back.
void ring_merge_bytes(Op& at, int cp, double a, double E, double kv) {
  const double c = cp;
  at.side_fwd_bytes = 2 * a * kv * c + E * (c * (a + 4) + 32 * (c - 1) + 4 + a);
  at.side_bwd_bytes = 4 * (E + kv) + (c - 1) * 2 * a * kv + (8 + a) * kv + (c - 1) * ((8 + a) / 2 + 8) * kv + c * (8 + a) * E +
                      8 * c * kv + (4 + a) * (E + kv);
}

// The input of a pre-norm block (residual stream) kept by its norm; the norm's output is kept by the
// GEMM that consumes it (dropped by `layernorm` recompute, which re-runs the norm).
Op norm_op(OpId id, const Dims& d, double h, uint32_t offload) {
  Op o = mem_op(id, norm_bytes_per_elem(d) * d.Tsp * h, 5 * d.Tsp * h);
  o.rerun_by = bit(RecomputeModule::layernorm);
  keep(o, d.Tsp * h * d.a, 0, offload);
  return o;
}

void mla_projections(std::vector<Op>& ops, const ModelSpec& m, const OpContext& c, const Dims& d, double heads, double dqk,
                     double dv) {
  const MlaSpec& a = *m.mla;
  const double h = double(m.hidden_size);
  const uint32_t ln = bit(RecomputeModule::layernorm), qkv_off = bit(OffloadModule::qkv_linear);
  const uint32_t up = bit(RecomputeModule::mla_up_proj);
  // down projections run on the sequence-parallel shard with replicated weights; both read the norm
  // output (one bf16 tensor, or one quantized copy per GEMM in fp8)
  if (a.q_lora_rank > 0) {
    Op q = gemm(OpId::q_down_gemm, d.Tsp, a.q_lora_rank, h, d.a);
    ops.push_back(keep(q, d.Tsp * h * d.g, ln, qkv_off));
  }
  Op kv = gemm(OpId::kv_down_gemm, d.Tsp, a.kv_lora_rank + a.qk_rope_head_dim, h, d.a);
  bool shares = a.q_lora_rank > 0 && d.g == d.a;
  ops.push_back(keep(kv, shares ? 0.0 : d.Tsp * h * d.g, ln, qkv_off));
  double latent = (a.q_lora_rank > 0 ? a.q_lora_rank : 0) + a.kv_lora_rank + a.qk_rope_head_dim;
  tp_enter(ops, c, d, latent);
  Op q_up = a.q_lora_rank > 0 ? gemm(OpId::q_up_gemm, d.T, heads * dqk, a.q_lora_rank, d.a)
                              : gemm(OpId::q_up_gemm, d.T, heads * dqk, h, d.a);
  ops.push_back(rerun(keep(q_up, d.T * (a.q_lora_rank > 0 ? a.q_lora_rank : h) * d.g), up));
  Op kv_up = gemm(OpId::kv_up_gemm, d.T, heads * (a.qk_head_dim + dv), a.kv_lora_rank, d.a);
  ops.push_back(rerun(keep(kv_up, d.T * a.kv_lora_rank * d.g), up));
}

// `window`: the share of the causal score matrix a windowed layer computes (1 = full attention).
void attention_block(std::vector<Op>& ops, const ModelSpec& m, const OpContext& c, const Dims& d, double window) {
  const double h = double(m.hidden_size), tp = c.tp;
  const uint32_t core = bit(RecomputeModule::core_attn), up = bit(RecomputeModule::mla_up_proj);
  Op an = norm_op(OpId::attn_norm, d, h, bit(OffloadModule::attn_norm));
  named(an, RematTensor::layer_input, an.saved_bytes);
  ops.push_back(sac(an, an.saved_bytes, 1));  // the block input stays; the norm re-runs
  double heads = double(m.num_attention_heads) / tp;
  double dqk, dv, kv_heads;
  if (m.mla) {
    dqk = m.mla->qk_head_dim + m.mla->qk_rope_head_dim;
    dv = m.mla->v_head_dim;
    kv_heads = heads;
    mla_projections(ops, m, c, d, heads, dqk, dv);
  } else {
    dqk = dv = m.kv_channels;
    kv_heads = double(m.num_query_groups) / tp;
    tp_enter(ops, c, d, h);
    Op qkv = gemm(OpId::qkv_gemm, d.T, (heads + 2 * kv_heads) * dqk, h, d.a);
    keep(qkv, d.Tsp * h * d.g, bit(RecomputeModule::layernorm), bit(OffloadModule::qkv_linear));
    // op SAC: wq and wv outputs saved (matmuls 1 and 3), wk recomputed (matmul 2)
    sac(qkv, d.T * (heads + kv_heads) * dqk * d.a, kv_heads / (heads + 2 * kv_heads));
    ops.push_back(qkv);
  }
  double qk_width = (heads + kv_heads) * dqk;
  // K/V as attention sees them (torchtitan repeats them to every head)
  double kv_seen = c.kv_repeated ? heads : kv_heads;
  // learned absolute positions (GPT-2/GPT-3) are added at the embedding: no rotary kernel in the layer
  const bool rotary = m.position_embedding == PositionEmbedding::rope || m.mla;
  double rope_bytes = rotary ? rope_bytes_per_elem(d) * d.T * qk_width : 0.0;
  // torchtitan's layout copies around SDPA, compiled or not: repeat_kv() materialises K and V at every
  // head (when there are fewer K/V heads), and the output's transpose(1, 2).contiguous() copies it
  // back (models/llama/model.py)
  if (c.kv_repeated) {
    rope_bytes += d.a * d.T * 2 * heads * dv;
    if (kv_heads < heads) rope_bytes += d.a * d.T * (kv_heads + heads) * (dqk + dv);
  }
  if (rope_bytes > 0) {
    Op rope = mem_op(OpId::rope, rope_bytes, rotary ? 3 * d.T * qk_width : 0.0);
    ops.push_back(rerun(sac(rope, 0, 1), m.mla ? up : 0));
  }
  double kv_bytes = d.T * kv_heads * (dqk + dv) * d.a;
  if (c.cp > 1) {
    Op x;
    if (c.cp_comm == OpContext::CpComm::p2p) {
      // ring: every rank passes its K/V chunk cp-1 times (overlapped with the attention blocks); TE keeps
      // the cp receive buffers alive until the forward returns
      x = comm(OpId::cp_kv_exchange, Collective::send_recv, CommGroup::cp, kv_bytes * (c.cp - 1));
      x.fwd_transient_bytes = kv_bytes * c.cp;
    } else if (c.cp_comm == OpContext::CpComm::allgather) {
      x = comm(OpId::cp_kv_exchange, Collective::all_gather, CommGroup::cp, kv_bytes * c.cp);
      x.fwd_transient_bytes = d.T * kv_seen * (dqk + dv) * d.a * c.cp;  // the gathered full-length K/V
    } else {
      // Ulysses: scatter heads / gather sequence for q, k, v (the output goes back after attention)
      x = comm(OpId::cp_a2a, Collective::all_to_all, CommGroup::cp, d.T * (heads * dqk) * d.a + kv_bytes);
    }
    ops.push_back(rerun(x, core));
  }
  // The attention output: one bf16 tensor kept by the fused attention and the projection GEMM; fp8
  // recipes add the projection's quantized copy.
  double out = d.T * heads * dv;
  if (c.flash_attention) {
    Op at = vocabulary_op(OpId::attn_core);
    at.rerun_by = core;
    at.attn = {int64_t(d.b), int64_t(heads), int64_t(d.sq), int64_t(d.skv), int64_t(dqk), int64_t(dv), true, c.triton_attention};
    // per rank with load-balanced causal chunks: half of the q x kv score matrix; a sliding window
    // skips the blocks outside it (flash attention's window_size), scaling the work by `window`
    at.fwd_flops = 2.0 * d.b * d.sq * d.skv * heads * (dqk + dv) * 0.5 * window;
    at.fwd_bytes = d.a * d.T * (heads * dqk + kv_heads * (dqk + dv) + heads * dv);
    keep(at, d.a * d.T * (heads * dqk + kv_seen * (dqk + dv)), m.mla ? up : 0, bit(OffloadModule::core_attn));
    keep(at, 4.0 * d.b * heads * d.sq, core, bit(OffloadModule::core_attn));  // fp32 softmax statistics
    sac(at, 4.0 * d.b * heads * d.sq, 0);  // op SAC keeps the attention output (on proj_gemm) and statistics
    named(at, RematTensor::qkv, d.a * d.T * (heads * dqk + kv_seen * (dqk + dv)));
    at.bwd_transient_bytes = d.a * d.T * (heads * dqk + kv_seen * (dqk + dv) + heads * dv);  // dq, dk, dv, dout
    if (c.torch_ring_attention && c.cp > 1) ring_merge_bytes(at, c.cp, d.a, d.T * heads * dv, d.T * kv_seen * (dqk + dv));
    ops.push_back(at);
  } else {
    // Megatron-LM's unfused path: batched GEMMs over the full (masked, not skipped) score matrix, with
    // or without a sliding window
    double scores = d.b * heads * d.sq * d.skv;
    double drop = m.attention_dropout > 0 ? 1 : 0;
    Op qk = gemm(OpId::attn_qk_gemm, d.sq, d.skv, dqk, d.a, int64_t(d.b * heads));
    ops.push_back(rerun(keep(qk, d.a * d.T * (heads + kv_heads) * dqk, m.mla ? up : 0, bit(OffloadModule::core_attn)), core));
    // scale + mask + softmax (+ dropout): the probabilities (and mask, dropout output) are saved
    Op sm = mem_op(OpId::attn_softmax, scores * (2 * d.a + drop * (d.a + 1)), 5 * scores);
    ops.push_back(rerun(keep(sm, scores * (d.a + drop * (1 + d.a)), core, bit(OffloadModule::core_attn)), core));
    Op pv = gemm(OpId::attn_pv_gemm, d.sq, dv, d.skv, d.a, int64_t(d.b * heads));
    ops.push_back(rerun(keep(pv, d.a * d.T * kv_heads * dv, m.mla ? up : 0, bit(OffloadModule::core_attn)), core));
  }
  if (c.cp > 1 && c.cp_comm == OpContext::CpComm::a2a)
    ops.push_back(comm(OpId::cp_a2a, Collective::all_to_all, CommGroup::cp, d.T * heads * dv * d.a));
  Op proj = gemm(OpId::proj_gemm, d.T, h, heads * dv, d.a);
  keep(proj, out * d.a, 0, bit(OffloadModule::attn_proj));
  sac(proj, out * d.a, 1);  // the attention output stays; wo (matmul 4) re-runs
  named(proj, RematTensor::out_proj, d.T * h * d.a);
  if (d.g != d.a) keep(proj, out * d.g, 0, bit(OffloadModule::attn_proj));
  ops.push_back(proj);
  tp_exit(ops, c, d, h);
  // bias-dropout-add: the dropout mask (1 byte per element) is saved
  Op res = mem_op(OpId::attn_residual, 3 * d.Tsp * h * d.a, d.Tsp * h);
  ops.push_back(keep(res, m.hidden_dropout > 0 ? d.Tsp * h : 0));
}

void dense_mlp(std::vector<Op>& ops, const ModelSpec& m, const OpContext& c, const Dims& d) {
  const double h = double(m.hidden_size), gate = m.gated_mlp() ? 2 : 1;
  const uint32_t mlp = bit(RecomputeModule::mlp);
  double f = double(m.ffn_hidden_size) / c.tp;
  tp_enter(ops, c, d, h, mlp);
  Op fc1 = gemm(OpId::fc1_gemm, d.T, gate * f, h, d.a);
  keep(fc1, d.Tsp * h * d.g, bit(RecomputeModule::layernorm));
  sac(fc1, d.T * f * d.a, gate > 1 ? 0.5 : 0);  // op SAC: w1 output saved (matmul 5), w3 re-runs (matmul 6)
  named(fc1, RematTensor::mlpwi, d.T * gate * f * d.a);
  ops.push_back(rerun(fc1, mlp));
  Op act = mem_op(OpId::act, d.T * f * act_bytes_per_elem(d, gate), 4 * d.T * f);
  keep(act, d.T * gate * f * d.a, mlp);
  ops.push_back(rerun(sac(act, 0, 1), mlp));
  Op fc2 = gemm(OpId::fc2_gemm, d.T, h, f, d.a);
  keep(fc2, d.T * f * d.g, mlp);
  named(fc2, RematTensor::mlpwo, d.T * h * d.a);
  ops.push_back(rerun(sac(fc2, d.T * h * d.a, 0), mlp));  // op SAC: the w2 output (matmul 7) is saved
  tp_exit(ops, c, d, h, mlp);
}

void moe_mlp(std::vector<Op>& ops, const ModelSpec& m, const OpContext& c, const Dims& d) {
  const double h = double(m.hidden_size), tp = c.tp, gate = m.gated_mlp() ? 2 : 1;
  const MoeSpec& e = *m.moe;
  const uint32_t moe = bit(RecomputeModule::moe), act_m = bit(RecomputeModule::moe_act), ln = bit(RecomputeModule::layernorm);
  const uint32_t shared = bit(RecomputeModule::shared_experts);
  // Every rank routes its sequence-parallel shard of tokens (MoE with TP requires SP).
  double Tl = d.T / tp;
  double local_experts = double(e.num_experts) / c.ep;
  const double f = c.moe_load_factor;  // the busiest rank's tokens over the mean
  double routed = Tl * e.top_k;        // token copies leaving (and on average arriving at) a rank
  double arriving = routed * f;        // ... arriving at the busiest rank
  double R = routed * c.etp;           // after the expert-TP all-gather (mean; the busiest x f)
  double fe = double(e.moe_ffn_hidden_size) / c.etp;
  Op r = gemm(OpId::router, Tl, e.num_experts, h, d.a);
  keep(r, Tl * h * d.a, ln);             // the norm output (the MoE layer's input)
  keep(r, Tl * e.num_experts * 4, moe);  // fp32 routing probabilities
  ops.push_back(rerun(r, moe));
  // latent MoE: the routed tokens travel and are computed at the latent width (moe_layer.py
  // fc1_latent_proj / fc2_latent_proj, replicated over tensor parallelism)
  const double w = e.moe_latent_size > 0 ? double(e.moe_latent_size) : h;
  if (e.moe_latent_size > 0) {
    Op down = gemm(OpId::moe_latent_down_gemm, Tl, w, h, d.a);
    ops.push_back(rerun(down, moe));  // reads the router's input, kept above
  }
  Op perm = mem_op(OpId::permute, 2 * routed * w * d.a, 0);
  perm.fwd_transient_bytes = routed * w * d.a;  // the permuted copy handed to the dispatcher
  ops.push_back(rerun(perm, moe));
  if (c.ep > 1) ops.push_back(rerun(comm(OpId::dispatch_a2a, Collective::all_to_all, CommGroup::ep, arriving * w * d.a), moe));
  if (c.etp > 1) ops.push_back(rerun(comm(OpId::etp_allgather, Collective::all_gather, CommGroup::etp, f * R * w * d.a), moe));
  double per_expert = R / local_experts;
  // sized for the mean load; the busiest rank takes f times as long and keeps f times the activations
  auto busiest = [f](Op o) {
    o.load_scale = f;
    o.saved_bytes *= f;
    for (auto& t : o.saved) t.bytes *= f;
    o.bwd_transient_bytes *= f;
    return o;
  };
  Op fc1 = gemm(OpId::expert_fc1_gemm, per_expert, gate * fe, w, d.a, int64_t(local_experts));
  ops.push_back(rerun(busiest(keep(fc1, R * w * d.g, moe, bit(OffloadModule::expert_fc1))), moe));
  Op act = mem_op(OpId::expert_act, R * fe * act_bytes_per_elem(d, gate), 4 * R * fe);
  keep(act, R * 4, moe);  // fp32 permuted probabilities
  ops.push_back(rerun(busiest(keep(act, R * gate * fe * d.a, moe, bit(OffloadModule::moe_act))), moe | act_m));
  Op fc2 = gemm(OpId::expert_fc2_gemm, per_expert, w, fe, d.a, int64_t(local_experts));
  ops.push_back(rerun(busiest(keep(fc2, R * fe * d.g, moe | act_m)), moe));
  if (c.etp > 1)
    ops.push_back(rerun(comm(OpId::etp_reduce_scatter, Collective::reduce_scatter, CommGroup::etp, f * R * w * d.a), moe));
  if (c.ep > 1) ops.push_back(rerun(comm(OpId::combine_a2a, Collective::all_to_all, CommGroup::ep, arriving * w * d.a), moe));
  // Megatron applies the routing probabilities inside the expert activation ("memory efficient token
  // permutation", megatron/core/transformer/moe/README.md): the activation keeps the fp32 permuted
  // probabilities and the unpermutation keeps only indices
  Op unperm = mem_op(OpId::unpermute, 2 * routed * w * d.a, routed * w);
  ops.push_back(rerun(unperm, moe));
  if (e.moe_latent_size > 0) {
    Op up = gemm(OpId::moe_latent_up_gemm, Tl, h, w, d.a);
    ops.push_back(rerun(keep(up, Tl * w * d.g, moe), moe));
  }
  if (e.shared_expert_ffn_hidden_size > 0) {
    double fs = double(e.shared_expert_ffn_hidden_size) / tp;
    tp_enter(ops, c, d, h, moe | shared);
    Op s1 = gemm(OpId::shared_fc1_gemm, d.T, gate * fs, h, d.a);
    ops.push_back(rerun(keep(s1, d.g != d.a ? d.Tsp * h * d.g : 0.0, ln | moe), moe | shared));
    Op sa = mem_op(OpId::shared_act, d.T * fs * act_bytes_per_elem(d, gate), 4 * d.T * fs);
    ops.push_back(rerun(keep(sa, d.T * gate * fs * d.a, moe | shared), moe | shared));
    Op s2 = gemm(OpId::shared_fc2_gemm, d.T, h, fs, d.a);
    ops.push_back(rerun(keep(s2, d.T * fs * d.g, moe | shared), moe | shared));
    tp_exit(ops, c, d, h, moe | shared);
  }
}

void mlp_block(std::vector<Op>& ops, const ModelSpec& m, const OpContext& c, const Dims& d, bool moe) {
  const double h = double(m.hidden_size);
  Op mn = norm_op(OpId::mlp_norm, d, h, bit(OffloadModule::mlp_norm));
  ops.push_back(moe ? mn : sac(mn, 0, 1));  // op SAC re-runs the residual add and the norm
  if (moe)
    moe_mlp(ops, m, c, d);
  else
    dense_mlp(ops, m, c, d);
  Op res = mem_op(OpId::mlp_residual, 3 * d.Tsp * h * d.a, d.Tsp * h);
  ops.push_back(keep(res, m.hidden_dropout > 0 ? d.Tsp * h : 0));
}

// A hybrid model's Mamba layer (Megatron-Core MambaLayer: pre-norm, MambaMixer, residual;
// megatron/core/ssm/mamba_mixer.py). Under tensor parallelism in_proj is column-parallel and out_proj
// row-parallel: each rank holds heads/tp heads, d_inner/tp channels and groups/tp groups of B and C.
// Under context parallelism an all-to-all trades the sequence shard for a head shard before the conv
// and back after the scan (megatron/core/ssm/mamba_context_parallel.py). Per token, with H heads of P
// channels, G groups, state N and chunk Q on the rank:
//  - the SSD scan (mamba_ssm ssd_combined.py: chunk cumsum, chunk states, state passing, C.B^T within
//    chunks, chunk scan) multiplies 2QNG (C.B^T) + 2QPH (within-chunk output) + 4NPH (chunk states in,
//    states out) FLOPs forward, and moves x and B, C twice, dt, the output, C.B^T (fp32, written and
//    read) and the fp32 chunk states H.P.N/Q per token four times (written, passed, read);
//  - the layer keeps the in_proj output (z, x, B, C, dt before the conv) and the scan's output for the
//    backward, which recomputes the conv and the chunk states (Megatron's memory-efficient path,
//    mamba_ssm mamba_split_conv1d_scan_combined).
void mamba_block(std::vector<Op>& ops, const ModelSpec& m, const OpContext& c, const Dims& d) {
  const MambaSpec& b = *m.mamba;
  const double h = double(m.hidden_size), tp = c.tp;
  const double H = b.num_heads / tp, P = b.head_dim, N = b.state_dim, G = b.num_groups / tp, Q = b.chunk_size;
  const double di = H * P, conv_w = di + 2 * G * N, in_w = 2 * di + 2 * G * N + H;
  Op an = norm_op(OpId::attn_norm, d, h, bit(OffloadModule::attn_norm));
  ops.push_back(an);
  tp_enter(ops, c, d, h);
  Op in = gemm(OpId::ssm_in_gemm, d.T, in_w, h, d.a);
  ops.push_back(keep(in, d.Tsp * h * d.g, bit(RecomputeModule::layernorm), bit(OffloadModule::qkv_linear)));
  // (context parallelism: z, x, B, C and dt each go through an all-to-all, y comes back through one)
  if (c.cp > 1) ops.push_back(comm(OpId::cp_a2a, Collective::all_to_all, CommGroup::cp, d.T * in_w * d.a));
  // Megatron's memory-efficient path (mamba_split_conv1d_scan_combined) keeps the in_proj output (x, B, C
  // and dt here, z by the gated norm) and recomputes the conv and the chunk states in the backward
  Op conv = mem_op(OpId::ssm_conv, 2 * d.T * conv_w * d.a, 2.0 * b.conv_kernel * d.T * conv_w);
  ops.push_back(keep(conv, d.T * (conv_w + H) * d.a));
  Op scan = vocabulary_op(OpId::ssm_scan);
  scan.fwd_flops = d.T * (2 * Q * N * G + 2 * Q * P * H + 4 * N * P * H);
  scan.fwd_bytes = d.T * (d.a * (2 * di + 4 * G * N + di) + 4 * H + 8 * G * Q + 16 * H * P * N / Q);
  keep(scan, d.T * di * d.a);  // the output (the gated norm's input)
  // the recomputed conv output, dx, dB, dC and the recomputed chunk states
  scan.bwd_transient_bytes = d.T * (2 * conv_w * d.a + 4 * H * P * N / Q);
  ops.push_back(scan);
  if (c.cp > 1) ops.push_back(comm(OpId::cp_a2a, Collective::all_to_all, CommGroup::cp, d.T * di * d.a));
  Op gn = mem_op(OpId::ssm_gate_norm, 3 * d.T * di * d.a, 6 * d.T * di);
  ops.push_back(keep(gn, d.T * di * d.a));  // z
  Op out = gemm(OpId::ssm_out_gemm, d.T, h, di, d.a);
  ops.push_back(keep(out, d.T * di * d.g, 0, bit(OffloadModule::attn_proj)));
  tp_exit(ops, c, d, h);
  Op res = mem_op(OpId::attn_residual, 3 * d.Tsp * h * d.a, d.Tsp * h);
  ops.push_back(keep(res, m.hidden_dropout > 0 ? d.Tsp * h : 0));
}

}  // namespace

double saved_gemm_input_bytes(Precision p) {
  switch (p) {
    case Precision::fp8:
      return 1.0;
    case Precision::mxfp8:
      return 1.0 + 1.0 / 32;
    case Precision::nvfp4:
      return 0.5 + 1.0 / 16;
    default:
      return activation_bytes(p);
  }
}

std::vector<Op> layer_ops(const ModelSpec& m, int layer, const OpContext& c) {
  Dims d = dims(c);
  std::vector<Op> ops;
  ops.reserve(24);
  const double window = m.attention_fraction(c.seq, c.packed_doc_tokens, m.is_window_layer(layer));
  switch (m.layer_kind(layer)) {
    case LayerKind::transformer:
      attention_block(ops, m, c, d, window);
      mlp_block(ops, m, c, d, m.is_moe_layer(layer));
      break;
    case LayerKind::mamba:
      mamba_block(ops, m, c, d);
      break;
    case LayerKind::attention:
      attention_block(ops, m, c, d, window);
      break;
    case LayerKind::mlp:
      mlp_block(ops, m, c, d, false);
      break;
    case LayerKind::moe:
      mlp_block(ops, m, c, d, true);
      break;
  }
  return ops;
}

std::vector<Op> embedding_ops(const ModelSpec& m, const OpContext& c) {
  Dims d = dims(c);
  const double h = double(m.hidden_size);
  std::vector<Op> ops;
  // vocabulary-parallel lookup of all T tokens on every TP rank, then a reduction over TP
  ops.push_back(mem_op(OpId::embedding, d.T * h * d.a * 2, 0));
  tp_exit(ops, c, d, h);
  return ops;
}

std::vector<Op> head_ops(const ModelSpec& m, const OpContext& c) {
  Dims d = dims(c);
  const double h = double(m.hidden_size), V = double(m.vocab_size) / c.tp;
  std::vector<Op> ops;
  Op fn = mem_op(OpId::final_norm, 2 * d.Tsp * h * d.a, 5 * d.Tsp * h);
  ops.push_back(keep(fn, d.Tsp * h * d.a));
  tp_enter(ops, c, d, h);
  Op head = gemm(OpId::lm_head_gemm, d.T, V, h, d.a);  // the output layer runs in bf16 in fp8 recipes
  ops.push_back(keep(head, d.Tsp * h * d.a));
  // Softmax cross-entropy over the vocabulary shard. Per logit element: bf16 logits (2 B) from the
  // head; what the loss keeps for its backward, and its working memory, by implementation.
  double L = d.T * V;
  Op ce = mem_op(OpId::cross_entropy, L * (d.a + 4), 4 * L);
  switch (c.loss_memory) {
    case LossMemory::megatron_fp32_softmax:
      keep(ce, 4 * L);                 // exp_logits in fp32 (logits.float(), softmax in place)
      ce.fwd_transient_bytes = 2 * L;  // the bf16 logits until the fp32 copy is made
      ce.bwd_transient_bytes = 2 * L;  // the bf16 logits gradient cast from the fp32 one
      break;
    case LossMemory::fused_in_place:
      keep(ce, 2 * L);  // the bf16 logits, overwritten by their gradient
      break;
    case LossMemory::torch_eager_fp32:
      keep(ce, 4 * L);                 // fp32 log_softmax output
      ce.fwd_transient_bytes = 6 * L;  // bf16 logits + their fp32 copy while log_softmax runs
      ce.bwd_transient_bytes = 8 * L;  // the nll and softmax gradients in fp32 (then a bf16 copy)
      break;
  }
  ops.push_back(ce);
  if (c.tp > 1) ops.push_back(comm(OpId::tp_allreduce, Collective::all_reduce, CommGroup::tp, d.T * 4 * 3));
  return ops;
}

}  // namespace mplan
