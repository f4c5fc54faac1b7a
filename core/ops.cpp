// Op lists of a transformer layer, the embedding and the head, per rank and micro-batch.
// Tokens per rank: T = b*s/cp inside tensor-parallel regions, T/tp in sequence-parallel regions.
// Saved-activation sizes follow Korthikanti et al. 2022 (without dropout masks), with flash attention
// keeping Q, K, V and the softmax statistics instead of the s x s scores.
#include "core/ops.h"

namespace mplan {

std::string to_string(OpKind k) {
  switch (k) {
    case OpKind::gemm: return "gemm";
    case OpKind::attention: return "attention";
    case OpKind::elementwise: return "elementwise";
    case OpKind::norm: return "norm";
    case OpKind::embedding: return "embedding";
    case OpKind::loss: return "loss";
    case OpKind::comm: return "comm";
    case OpKind::optimizer: return "optimizer";
  }
  return "?";
}

std::string to_string(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_to_all: return "all_to_all";
    case Collective::send_recv: return "send_recv";
    case Collective::broadcast: return "broadcast";
  }
  return "?";
}

double collective_busbw_factor(Collective c, int n) {
  if (n <= 1) return 0;
  switch (c) {
    case Collective::all_reduce: return 2.0 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return double(n - 1) / n;
    default: return 1.0;
  }
}

std::string to_string(CommGroup g) {
  switch (g) {
    case CommGroup::tp: return "tp";
    case CommGroup::cp: return "cp";
    case CommGroup::ep: return "ep";
    case CommGroup::etp: return "etp";
    case CommGroup::dp: return "dp";
    case CommGroup::edp: return "edp";
    case CommGroup::pp: return "pp";
  }
  return "?";
}

const std::vector<std::string>& op_vocabulary() {
  static const std::vector<std::string> v = {
      "embedding",        "attn_norm",        "qkv_gemm",         "q_down_gemm",     "q_up_gemm",
      "kv_down_gemm",     "kv_up_gemm",       "rope",             "attn_core",       "proj_gemm",
      "attn_residual",    "mlp_norm",         "fc1_gemm",         "act",             "fc2_gemm",
      "mlp_residual",     "router",           "permute",          "expert_fc1_gemm", "expert_act",
      "expert_fc2_gemm",  "unpermute",        "shared_fc1_gemm",  "shared_act",      "shared_fc2_gemm",
      "final_norm",       "lm_head_gemm",     "cross_entropy",    "tp_allgather",    "tp_reduce_scatter",
      "tp_allreduce",     "cp_kv_exchange",   "cp_a2a",           "dispatch_a2a",    "combine_a2a",
      "attn_qk_gemm",     "attn_softmax",     "attn_pv_gemm",
      "etp_allgather",    "etp_reduce_scatter", "pp_send_recv",   "dp_reduce_scatter", "dp_allreduce",
      "dp_allgather",     "adamw"};
  return v;
}

namespace {

struct Dims {
  double T;     // tokens per rank in TP regions (b*s/cp)
  double Tsp;   // tokens per rank in SP regions
  double a;     // bytes per activation element
  double b, sq, skv;
};

Dims dims(const OpContext& c) {
  Dims d;
  d.b = double(c.micro_batch);
  d.sq = double(c.seq) / c.cp;
  d.skv = double(c.seq);
  d.T = d.b * d.sq;
  d.Tsp = c.sp ? d.T / c.tp : d.T;
  d.a = activation_bytes(c.precision);
  return d;
}

Op gemm(const std::string& name, double m, double n, double k, double a, double saved, int64_t groups = 1) {
  Op o;
  o.name = name;
  o.kind = OpKind::gemm;
  o.gemm = {int64_t(m), int64_t(n), int64_t(k), groups};
  o.fwd_flops = 2.0 * m * n * k * double(groups);
  o.fwd_bytes = a * double(groups) * (m * k + k * n + m * n);
  o.saved_bytes = saved;
  return o;
}

Op mem_op(const std::string& name, OpKind kind, double bytes, double flops, double saved) {
  Op o;
  o.name = name;
  o.kind = kind;
  o.fwd_bytes = bytes;
  o.fwd_flops = flops;
  o.saved_bytes = saved;
  return o;
}

Op comm(const std::string& name, Collective coll, CommGroup g, double bytes) {
  Op o;
  o.name = name;
  o.kind = OpKind::comm;
  o.collective = coll;
  o.group = g;
  o.comm_bytes = bytes;
  return o;
}

// TP entry/exit collectives around a column->row parallel pair.
void tp_enter(std::vector<Op>& ops, const OpContext& c, const Dims& d, double width) {
  if (c.tp > 1 && c.sp) ops.push_back(comm("tp_allgather", Collective::all_gather, CommGroup::tp, d.T * width * d.a));
}
void tp_exit(std::vector<Op>& ops, const OpContext& c, const Dims& d, double width) {
  if (c.tp <= 1) return;
  if (c.sp)
    ops.push_back(comm("tp_reduce_scatter", Collective::reduce_scatter, CommGroup::tp, d.T * width * d.a));
  else
    ops.push_back(comm("tp_allreduce", Collective::all_reduce, CommGroup::tp, d.T * width * d.a));
}

void attention_block(std::vector<Op>& ops, const ModelSpec& m, const OpContext& c, const Dims& d) {
  const double h = double(m.hidden_size), tp = c.tp;
  ops.push_back(mem_op("attn_norm", OpKind::norm, 2 * d.Tsp * h * d.a, 5 * d.Tsp * h, d.Tsp * h * d.a));
  double heads = double(m.num_attention_heads) / tp;
  double dqk, dv, kv_heads;
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    dqk = a.qk_head_dim + a.qk_rope_head_dim;
    dv = a.v_head_dim;
    kv_heads = heads;
    // down projections run on the sequence-parallel shard with replicated weights
    if (a.q_lora_rank > 0) {
      ops.push_back(gemm("q_down_gemm", d.Tsp, a.q_lora_rank, h, d.a, d.Tsp * h * d.a));
    }
    ops.push_back(gemm("kv_down_gemm", d.Tsp, a.kv_lora_rank + a.qk_rope_head_dim, h, d.a,
                       a.q_lora_rank > 0 ? 0.0 : d.Tsp * h * d.a));
    double latent = (a.q_lora_rank > 0 ? a.q_lora_rank : 0) + a.kv_lora_rank + a.qk_rope_head_dim;
    tp_enter(ops, c, d, latent);
    if (a.q_lora_rank > 0)
      ops.push_back(gemm("q_up_gemm", d.T, heads * dqk, a.q_lora_rank, d.a, d.T * a.q_lora_rank * d.a));
    else
      ops.push_back(gemm("q_up_gemm", d.T, heads * dqk, h, d.a, d.T * h * d.a));
    ops.push_back(gemm("kv_up_gemm", d.T, heads * (a.qk_head_dim + dv), a.kv_lora_rank, d.a, d.T * a.kv_lora_rank * d.a));
  } else {
    dqk = dv = m.kv_channels;
    kv_heads = double(m.num_query_groups) / tp;
    tp_enter(ops, c, d, h);
    ops.push_back(gemm("qkv_gemm", d.T, (heads + 2 * kv_heads) * dqk, h, d.a, d.Tsp * h * d.a));
  }
  double qk_width = (heads + kv_heads) * dqk;
  ops.push_back(mem_op("rope", OpKind::elementwise, 2 * d.T * qk_width * d.a, 3 * d.T * qk_width, 0));
  if (c.cp > 1) {
    double kv_bytes = d.T * kv_heads * (dqk + dv) * d.a;
    if (c.cp_comm == OpContext::CpComm::p2p) {
      // ring: every rank passes its K/V chunk cp-1 times (overlapped with the attention blocks)
      ops.push_back(comm("cp_kv_exchange", Collective::send_recv, CommGroup::cp, kv_bytes * (c.cp - 1)));
    } else if (c.cp_comm == OpContext::CpComm::allgather) {
      ops.push_back(comm("cp_kv_exchange", Collective::all_gather, CommGroup::cp, kv_bytes * c.cp));
    } else {
      // Ulysses: scatter heads / gather sequence for q, k, v (the output goes back after attention)
      ops.push_back(comm("cp_a2a", Collective::all_to_all, CommGroup::cp, d.T * (heads * dqk) * d.a + kv_bytes));
    }
  }
  if (c.flash_attention) {
    Op at;
    at.name = "attn_core";
    at.kind = OpKind::attention;
    at.attn = {int64_t(d.b), int64_t(heads), int64_t(d.sq), int64_t(d.skv), int64_t(dqk), int64_t(dv), true, c.triton_attention};
    // per rank with load-balanced causal chunks: half of the q x kv score matrix
    at.fwd_flops = 2.0 * d.b * d.sq * d.skv * heads * (dqk + dv) * 0.5;
    at.fwd_bytes = d.a * d.T * (heads * dqk + kv_heads * (dqk + dv) + heads * dv);
    at.saved_bytes = d.a * d.T * (heads * dqk + kv_heads * (dqk + dv)) + 4.0 * d.b * heads * d.sq;
    ops.push_back(at);
  } else {
    // Megatron-LM's unfused path: batched GEMMs over the full (masked, not skipped) score matrix
    double scores = d.b * heads * d.sq * d.skv;
    double drop = m.attention_dropout > 0 ? 1 : 0;
    Op qk = gemm("attn_qk_gemm", d.sq, d.skv, dqk, d.a, d.a * d.T * (heads + kv_heads) * dqk, int64_t(d.b * heads));
    ops.push_back(qk);
    // scale + mask + softmax (+ dropout): the probabilities (and mask, dropout output) are saved
    ops.push_back(mem_op("attn_softmax", OpKind::elementwise, scores * (2 * d.a + drop * (d.a + 1)), 5 * scores,
                         scores * (d.a + drop * (1 + d.a))));
    ops.push_back(gemm("attn_pv_gemm", d.sq, dv, d.skv, d.a, d.a * d.T * kv_heads * dv, int64_t(d.b * heads)));
  }
  if (c.cp > 1 && c.cp_comm == OpContext::CpComm::a2a)
    ops.push_back(comm("cp_a2a", Collective::all_to_all, CommGroup::cp, d.T * heads * dv * d.a));
  ops.push_back(gemm("proj_gemm", d.T, h, heads * dv, d.a, d.T * heads * dv * d.a));
  tp_exit(ops, c, d, h);
  // bias-dropout-add: the dropout mask (1 byte per element) is saved
  ops.push_back(mem_op("attn_residual", OpKind::elementwise, 3 * d.Tsp * h * d.a, d.Tsp * h,
                       m.hidden_dropout > 0 ? d.Tsp * h : 0));
}

void mlp_block(std::vector<Op>& ops, const ModelSpec& m, const OpContext& c, const Dims& d, bool moe) {
  const double h = double(m.hidden_size), tp = c.tp;
  const double gate = m.gated_mlp() ? 2 : 1;
  ops.push_back(mem_op("mlp_norm", OpKind::norm, 2 * d.Tsp * h * d.a, 5 * d.Tsp * h, d.Tsp * h * d.a));
  if (!moe) {
    double f = double(m.ffn_hidden_size) / tp;
    tp_enter(ops, c, d, h);
    ops.push_back(gemm("fc1_gemm", d.T, gate * f, h, d.a, d.Tsp * h * d.a));
    ops.push_back(mem_op("act", OpKind::elementwise, d.T * f * (gate + 1) * d.a, 4 * d.T * f, d.T * gate * f * d.a));
    ops.push_back(gemm("fc2_gemm", d.T, h, f, d.a, d.T * f * d.a));
    tp_exit(ops, c, d, h);
  } else {
    const MoeSpec& e = *m.moe;
    // Every rank routes its sequence-parallel shard of tokens (MoE with TP requires SP).
    double Tl = d.T / tp;
    double local_experts = double(e.num_experts) / c.ep;
    const double f = c.moe_load_factor;  // the busiest rank's tokens over the mean
    double routed = Tl * e.top_k;         // token copies leaving (and on average arriving at) a rank
    double arriving = routed * f;         // ... arriving at the busiest rank
    double R = routed * c.etp;            // after the expert-TP all-gather (mean; the busiest x f)
    double fe = double(e.moe_ffn_hidden_size) / c.etp;
    Op r = gemm("router", Tl, e.num_experts, h, d.a, 0);
    r.saved_bytes = Tl * e.num_experts * 4;  // fp32 routing probabilities
    ops.push_back(r);
    ops.push_back(mem_op("permute", OpKind::elementwise, 2 * routed * h * d.a, 0, 0));
    if (c.ep > 1) ops.push_back(comm("dispatch_a2a", Collective::all_to_all, CommGroup::ep, arriving * h * d.a));
    if (c.etp > 1) ops.push_back(comm("etp_allgather", Collective::all_gather, CommGroup::etp, f * R * h * d.a));
    double per_expert = R / local_experts;
    // sized for the mean load; the busiest rank takes f times as long and keeps f times the activations
    auto busiest = [f](Op o) {
      o.load_scale = f;
      o.saved_bytes *= f;
      return o;
    };
    ops.push_back(busiest(gemm("expert_fc1_gemm", per_expert, gate * fe, h, d.a, R * h * d.a, int64_t(local_experts))));
    ops.push_back(busiest(mem_op("expert_act", OpKind::elementwise, R * fe * (gate + 1) * d.a, 4 * R * fe, R * gate * fe * d.a)));
    ops.push_back(busiest(gemm("expert_fc2_gemm", per_expert, h, fe, d.a, R * fe * d.a, int64_t(local_experts))));
    if (c.etp > 1) ops.push_back(comm("etp_reduce_scatter", Collective::reduce_scatter, CommGroup::etp, f * R * h * d.a));
    if (c.ep > 1) ops.push_back(comm("combine_a2a", Collective::all_to_all, CommGroup::ep, arriving * h * d.a));
    ops.push_back(mem_op("unpermute", OpKind::elementwise, 2 * routed * h * d.a, routed * h, routed * h * d.a));
    if (e.shared_expert_ffn_hidden_size > 0) {
      double fs = double(e.shared_expert_ffn_hidden_size) / tp;
      tp_enter(ops, c, d, h);
      ops.push_back(gemm("shared_fc1_gemm", d.T, gate * fs, h, d.a, 0));
      ops.push_back(mem_op("shared_act", OpKind::elementwise, d.T * fs * (gate + 1) * d.a, 4 * d.T * fs, d.T * gate * fs * d.a));
      ops.push_back(gemm("shared_fc2_gemm", d.T, h, fs, d.a, d.T * fs * d.a));
      tp_exit(ops, c, d, h);
    }
  }
  ops.push_back(mem_op("mlp_residual", OpKind::elementwise, 3 * d.Tsp * h * d.a, d.Tsp * h,
                       m.hidden_dropout > 0 ? d.Tsp * h : 0));
}

}  // namespace

std::vector<Op> layer_ops(const ModelSpec& m, int layer, const OpContext& c) {
  Dims d = dims(c);
  std::vector<Op> ops;
  ops.reserve(24);
  attention_block(ops, m, c, d);
  mlp_block(ops, m, c, d, m.is_moe_layer(layer));
  return ops;
}

std::vector<Op> embedding_ops(const ModelSpec& m, const OpContext& c) {
  Dims d = dims(c);
  const double h = double(m.hidden_size);
  std::vector<Op> ops;
  // vocabulary-parallel lookup of all T tokens on every TP rank, then a reduction over TP
  ops.push_back(mem_op("embedding", OpKind::embedding, d.T * h * d.a * 2, 0, 0));
  tp_exit(ops, c, d, h);
  return ops;
}

std::vector<Op> head_ops(const ModelSpec& m, const OpContext& c) {
  Dims d = dims(c);
  const double h = double(m.hidden_size), V = double(m.vocab_size) / c.tp;
  std::vector<Op> ops;
  ops.push_back(mem_op("final_norm", OpKind::norm, 2 * d.Tsp * h * d.a, 5 * d.Tsp * h, d.Tsp * h * d.a));
  tp_enter(ops, c, d, h);
  ops.push_back(gemm("lm_head_gemm", d.T, V, h, d.a, d.Tsp * h * d.a));
  // fp32 softmax over the vocabulary shard; the logits gradient is written in place
  Op ce = mem_op("cross_entropy", OpKind::loss, d.T * V * (d.a + 4), 4 * d.T * V, d.T * V * 4);
  ops.push_back(ce);
  if (c.tp > 1) ops.push_back(comm("tp_allreduce", Collective::all_reduce, CommGroup::tp, d.T * 4 * 3));
  return ops;
}

}  // namespace mplan
