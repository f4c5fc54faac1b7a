// Per-rank sizes of a plan and the executor's supported-feature check.
#include "executor/model/dims.h"

namespace mplan::exec {

std::vector<int32_t> LayoutDims::local_positions(int r) const {
  std::vector<int32_t> pos;
  pos.reserve(size_t(Tl));
  if (cp == 1) {
    for (int64_t t = 0; t < S; ++t) pos.push_back(int32_t(t));
    return pos;
  }
  const int64_t chunk = S / (2 * cp);
  for (int64_t c : {int64_t(r), int64_t(2 * cp - 1 - r)})
    for (int64_t t = 0; t < chunk; ++t) pos.push_back(int32_t(c * chunk + t));
  return pos;
}

LayoutDims make_layout_dims(const Plan& plan, const RankCoord& c) {
  const ModelSpec& m = plan.model;
  const ParallelConfig& p = plan.parallel;
  LayoutDims d;
  d.C = m.hidden_size;
  d.V = m.vocab_size;
  d.F = m.ffn_hidden_size;
  d.Hq = m.num_attention_heads;
  d.Hkv = m.num_query_groups;
  d.D = m.kv_channels;
  d.num_layers = m.num_layers;
  d.act = m.activation == Activation::swiglu         ? ActKind::swiglu
          : m.activation == Activation::squared_relu ? ActKind::squared_relu
                                                     : ActKind::gelu;
  d.rmsnorm = m.norm == NormKind::rmsnorm;
  d.tied = m.tied_embeddings;
  d.learned_pos = m.position_embedding == PositionEmbedding::learned;
  d.rope = m.position_embedding == PositionEmbedding::rope;
  d.max_pos = m.max_position_embeddings;
  d.bias = m.add_bias_linear;
  d.qkv_bias = m.add_qkv_bias || m.add_bias_linear;
  d.qk_norm = m.qk_layernorm;
  d.norm_eps = float(m.norm_epsilon);
  d.rope_base = float(m.rotary_base);
  if (m.moe) {
    d.E = m.moe->num_experts;
    d.topk = m.moe->top_k;
    d.Fe = m.moe->moe_ffn_hidden_size;
    d.Fs = m.moe->shared_expert_ffn_hidden_size;
  }
  d.tp = p.tp;
  d.tp_rank = c.tp;
  d.cp = p.cp;
  d.cp_rank = c.cp;
  d.dp = p.dp();
  d.dp_rank = c.dp;
  d.pp = p.pp;
  d.pp_rank = c.pp;
  d.vpp = p.vpp;
  d.ep = p.ep;
  d.ep_rank = c.ep;
  d.etp = p.etp;
  d.etp_rank = c.etp;
  d.edp = p.edp();
  d.sp = p.sp && p.tp > 1;
  d.zero = p.zero;
  d.B = p.micro_batch_size;
  d.S = plan.training.seq_length;
  d.gbs = plan.training.global_batch_size;
  d.microbatches = p.num_microbatches(d.gbs);
  d.Tl = d.S / d.cp;
  d.N = d.B * d.Tl;
  d.Nsp = d.sp ? d.N / d.tp : d.N;
  d.Hq_l = d.Hq / d.tp;
  d.Hkv_l = d.Hkv / d.tp;
  d.F_l = d.F / d.tp;
  d.Fs_l = d.Fs / d.tp;
  d.Fe_l = d.etp > 0 ? d.Fe / d.etp : 0;
  d.Vpad = (d.V + d.tp - 1) / d.tp * d.tp;
  d.V_l = d.Vpad / d.tp;
  d.vstart = int64_t(d.tp_rank) * d.V_l;
  d.v_valid = std::max<int64_t>(0, std::min<int64_t>(d.V_l, d.V - d.vstart));
  d.E_l = d.ep > 0 ? d.E / d.ep : 0;
  d.e_first = int64_t(d.ep_rank) * d.E_l;
  return d;
}

std::vector<std::string> unsupported_features(const Plan& plan) {
  std::vector<std::string> out;
  const ModelSpec& m = plan.model;
  const ParallelConfig& p = plan.parallel;
  if (m.mla)
    out.push_back("model '" + m.name +
                  "' uses multi-head latent attention (mla), which the CPU executor does not "
                  "implement; remove the mla block to train a GQA model of the same size");
  if (m.is_hybrid())
    out.push_back("model '" + m.name +
                  "' is a hybrid of Mamba, attention, MLP and MoE layers (hybrid_override_pattern); the executor "
                  "trains transformer layers only");
  if (m.moe && m.moe->moe_latent_size > 0)
    out.push_back("model.moe.moe_latent_size: latent MoE is not implemented by the executor; remove it");
  if (m.mtp_num_layers > 0)
    out.push_back("model '" + m.name + "' has mtp_num_layers=" + std::to_string(m.mtp_num_layers) +
                  "; multi-token prediction is not implemented by the executor, set it to 0");
  // Architecture details the executor's kernels do not implement: refused by field, never ignored.
  if (m.position_embedding == PositionEmbedding::rope && m.rotary_percent != 1.0)
    out.push_back("model.rotary_percent=" + std::to_string(m.rotary_percent) +
                  ": partial rotary embeddings are not implemented "
                  "by the executor; set it to 1");
  if (m.rope_scaling.type != RopeScalingType::none)
    out.push_back("model.rope_scaling (" + to_string(m.rope_scaling.type) + ") is not implemented by the executor; remove it");
  if (m.window_size > 0)
    out.push_back("model.window_size=" + std::to_string(m.window_size) +
                  ": sliding-window attention is not implemented by the "
                  "executor's attention kernels; remove window_size to train full attention");
  if (m.softmax_type != SoftmaxType::vanilla)
    out.push_back("model.softmax_type=" + to_string(m.softmax_type) +
                  ": attention sinks are not implemented by the executor; "
                  "use vanilla");
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    if (e.router_score_function != RouterScore::softmax || e.router_enable_expert_bias)
      out.push_back(
          "model.moe.router_score_function/router_enable_expert_bias: the executor's router is a softmax without "
          "expert bias; use softmax and false");
    if (e.router_num_groups > 0)
      out.push_back("model.moe.router_num_groups: group-limited routing is not implemented by the executor; remove it");
    if (e.router_topk_scaling_factor != 1.0)
      out.push_back("model.moe.router_topk_scaling_factor: not implemented by the executor; use 1");
  }
  if (m.kv_channels % 2 != 0 && m.position_embedding == PositionEmbedding::rope)
    out.push_back("kv_channels=" + std::to_string(m.kv_channels) + " must be even for rotary embeddings");
  if (m.position_embedding == PositionEmbedding::learned && plan.training.seq_length > m.max_position_embeddings)
    out.push_back("seq_length=" + std::to_string(plan.training.seq_length) + " exceeds max_position_embeddings=" +
                  std::to_string(m.max_position_embeddings) + " of the learned position table");
  if (p.sp && p.tp > 1 && (p.micro_batch_size * plan.training.seq_length / p.cp) % p.tp != 0)
    out.push_back("sequence parallel needs micro_batch_size*seq_length/cp divisible by tp");
  return out;
}

}  // namespace mplan::exec
