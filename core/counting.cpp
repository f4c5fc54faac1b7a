// Parameter and model-FLOP counting (Megatron-LM conventions).
#include "core/counting.h"

namespace mplan {

namespace {

double norm_params(const ModelSpec& m, double width) { return m.norm == NormKind::layernorm ? 2 * width : width; }

double attention_params(const ModelSpec& m) {
  double h = double(m.hidden_size);
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    double heads = m.num_attention_heads;
    double q = 0;
    if (a.q_lora_rank > 0)
      q = h * a.q_lora_rank + a.q_lora_rank /*q norm*/ + double(a.q_lora_rank) * heads * (a.qk_head_dim + a.qk_rope_head_dim);
    else
      q = h * heads * (a.qk_head_dim + a.qk_rope_head_dim);
    double kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank /*kv norm*/ +
                double(a.kv_lora_rank) * heads * (a.qk_head_dim + a.v_head_dim);
    double o = heads * a.v_head_dim * h;
    return q + kv + o + (m.add_bias_linear ? h : 0);
  }
  double qw = double(m.num_attention_heads) * m.kv_channels;
  double kvw = double(m.num_query_groups) * m.kv_channels;
  double p = h * (qw + 2 * kvw) + qw * h;
  if (m.add_qkv_bias || m.add_bias_linear) p += qw + 2 * kvw;
  if (m.add_bias_linear) p += h;
  if (m.qk_layernorm) p += 2 * norm_params(m, m.kv_channels);
  return p;
}

// One MLP of width f (dense, one expert, or shared expert) on tokens of width h (default: hidden_size;
// a latent MoE's routed experts: the latent width).
double mlp_params(const ModelSpec& m, double f, double h = 0) {
  if (h <= 0) h = double(m.hidden_size);
  double mats = m.gated_mlp() ? 3 : 2;
  double p = mats * h * f;
  if (m.add_bias_linear) p += (m.gated_mlp() ? 2 * f : f) + h;
  return p;
}

// Megatron-Core MambaMixer: in_proj (no bias), conv1d with bias, A_log, D and dt_bias per head, the
// gated RMSNorm over d_inner, out_proj (no bias).
double mamba_params(const ModelSpec& m) {
  const MambaSpec& b = *m.mamba;
  const double h = double(m.hidden_size), di = double(b.d_inner()), conv = double(b.conv_width());
  return h * double(b.in_proj_width()) + conv * (b.conv_kernel + 1) + 3.0 * b.num_heads + di + di * h;
}

// The experts of an MoE layer (router, routed, shared) into `lp`.
void moe_params(const ModelSpec& m, LayerParams& lp) {
  const MoeSpec& e = *m.moe;
  const double h = double(m.hidden_size);
  lp.router = h * e.num_experts + (m.add_bias_linear ? e.num_experts : 0);
  double one = mlp_params(m, double(e.moe_ffn_hidden_size), double(e.moe_latent_size));
  lp.experts = one * e.num_experts;
  lp.experts_active = one * e.top_k;
  if (e.shared_expert_ffn_hidden_size > 0) lp.shared_experts = mlp_params(m, double(e.shared_expert_ffn_hidden_size));
  lp.router += 2 * h * double(e.moe_latent_size);  // the latent projections (replicated, like the router)
}

}  // namespace

LayerParams layer_params_at(const ModelSpec& m, int layer) {
  const double h = double(m.hidden_size);
  LayerParams lp;
  switch (m.layer_kind(layer)) {
    case LayerKind::transformer:
      return layer_params(m, m.is_moe_layer(layer));
    case LayerKind::mamba:
      if (m.mamba) lp.mamba = mamba_params(m);
      break;
    case LayerKind::attention:
      lp.attention = attention_params(m);
      break;
    case LayerKind::mlp:
      lp.mlp = mlp_params(m, double(m.ffn_hidden_size));
      break;
    case LayerKind::moe:
      if (m.moe) moe_params(m, lp);
      break;
  }
  lp.norms = norm_params(m, h);  // the one pre-norm of a hybrid layer
  return lp;
}

LayerParams layer_params(const ModelSpec& m, bool moe_layer) {
  LayerParams lp;
  double h = double(m.hidden_size);
  lp.attention = attention_params(m);
  lp.norms = 2 * norm_params(m, h);
  if (moe_layer && m.moe) {
    moe_params(m, lp);
  } else {
    lp.mlp = mlp_params(m, double(m.ffn_hidden_size));
  }
  return lp;
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  double h = double(m.hidden_size), V = double(m.vocab_size);
  c.embedding = V * h + (m.position_embedding == PositionEmbedding::learned ? double(m.max_position_embeddings) * h : 0);
  c.output = m.tied_embeddings ? 0 : V * h;
  c.final_norm = norm_params(m, h);
  c.dense_layer = layer_params(m, false);
  c.dense_layer_total = c.dense_layer.total();
  if (m.moe) {
    c.moe_layer = layer_params(m, true);
    c.moe_layer_total = c.moe_layer.total();
  }
  for (int i = 0; i < m.num_layers; ++i) {
    const LayerParams lp = m.is_hybrid() ? layer_params_at(m, i) : m.is_moe_layer(i) ? c.moe_layer : c.dense_layer;
    c.layers_total += lp.total();
    c.layers_active += lp.active();
  }
  c.total = c.embedding + c.output + c.final_norm + c.layers_total;
  c.active = c.embedding + c.output + c.final_norm + c.layers_active;
  c.active_excl_embedding = c.active - c.embedding + (m.tied_embeddings ? double(m.vocab_size) * h : 0);
  if (m.mtp_num_layers > 0) {
    // DeepSeek-V3 MTP module: two norms, a 2h->h projection, one transformer layer (MoE like the
    // last layer) and a final norm; embedding and head are shared with the main model.
    // (a hybrid model's MTP depth is Megatron's "*E" / "*-" pattern: attention and an MoE or MLP layer)
    bool moe_last = m.is_hybrid() ? m.is_moe() : m.is_moe_layer(m.num_layers - 1);
    double one = 2 * norm_params(m, h) + 2 * h * h + (moe_last ? c.moe_layer_total : c.dense_layer_total) + norm_params(m, h);
    c.mtp = one * m.mtp_num_layers;
  }
  return c;
}

std::vector<StageParams> params_per_stage(const ModelSpec& m, const ParallelConfig& p) {
  ParamCounts c = count_params(m);
  auto n = layers_per_stage_chunk(m, p);
  std::vector<StageParams> out(p.pp);
  LayerParams dense = layer_params(m, false), moe = m.moe ? layer_params(m, true) : dense;
  int idx = 0;  // model order is chunk-major: (chunk 0: stage 0..pp-1), (chunk 1: ...)
  for (int ch = 0; ch < p.vpp; ++ch) {
    for (int s = 0; s < p.pp; ++s) {
      for (int i = idx; i < idx + n[s][ch]; ++i) {
        const LayerParams lp = m.is_hybrid() ? layer_params_at(m, i) : m.is_moe_layer(i) ? moe : dense;
        out[s].dense += lp.total() - lp.experts;
        out[s].expert += lp.experts;
      }
      idx += n[s][ch];
    }
  }
  out[0].dense += c.embedding;
  double head = m.tied_embeddings ? (p.pp > 1 ? double(m.vocab_size) * m.hidden_size : 0) : c.output;
  out[p.pp - 1].dense += head + c.final_norm;
  if (m.mtp_num_layers > 0) {
    LayerParams lp = layer_params(m, m.is_hybrid() ? m.is_moe() : m.is_moe_layer(m.num_layers - 1));
    out[p.pp - 1].dense += c.mtp - lp.experts * m.mtp_num_layers;
    out[p.pp - 1].expert += lp.experts * m.mtp_num_layers;
  }
  return out;
}

namespace {

// Megatron-LM's hybrid branch of num_floating_point_operations (megatron/training/training.py, read at
// NVIDIA/Megatron-LM@d98e8a6): per layer kind, forward FLOPs with the multiply-add's 2 included, times 3
// for the backward; MTP depths count as layers of their pattern (mplan: attention + MoE, or + MLP) and
// as extra logit layers; the Mamba term takes d_inner as 2 x hidden (Megatron's own simplification,
// kept so that MFU compares with published figures); conv1d, norms and the router are not counted.
double hybrid_flops_per_step(const ModelSpec& m, double B, double s, double causal) {
  const double T = B * s, h = double(m.hidden_size);
  double n_attn = 0, n_mlp = 0, n_moe = 0, n_mamba = 0;
  for (int i = 0; i < m.num_layers; ++i) switch (m.layer_kind(i)) {
      case LayerKind::mamba:
        ++n_mamba;
        break;
      case LayerKind::attention:
        ++n_attn;
        break;
      case LayerKind::moe:
        ++n_moe;
        break;
      default:
        ++n_mlp;
        break;
    }
  const double mtp = m.mtp_num_layers;
  n_attn += mtp;
  (m.moe ? n_moe : n_mlp) += mtp;
  const double c = m.gated_mlp() ? 1.5 : 1.0;
  const double p = double(m.kv_channels) * m.num_attention_heads / h;
  const double g = m.num_query_groups;
  const double attn = 4 * T * h * p * (h + h * g / m.num_attention_heads) + 2 * causal * 2 * B * s * s * h * p;
  const double mlp = 4 * T * h * double(m.ffn_hidden_size) * c;
  double moe = 0;
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    const double width = e.moe_latent_size > 0 ? double(e.moe_latent_size) : h;
    moe = 4 * T * width * double(e.moe_ffn_hidden_size) * e.top_k * c + 4 * T * h * double(e.shared_expert_ffn_hidden_size) * c;
    if (e.moe_latent_size > 0) moe += 4 * T * h * double(e.moe_latent_size);
  }
  double mamba = 0;
  if (m.mamba) {
    const MambaSpec& b = *m.mamba;
    const double d_in = 2 * h, G = b.num_groups, N = b.state_dim, H = b.num_heads;
    mamba = 2 * T * h * (2 * d_in + 2 * G * N + H) + 7 * T * d_in * N + 2 * T * d_in * h;
  }
  const double logits = 2 * T * h * double(m.vocab_size) * (1 + mtp);
  return 3 * (n_attn * attn + n_mlp * mlp + n_moe * moe + n_mamba * mamba + logits);
}

}  // namespace

double model_flops_per_step(const ModelSpec& m, int64_t global_batch, int64_t seq, AttentionFlops conv) {
  if (m.is_hybrid())
    return hybrid_flops_per_step(m, double(global_batch), double(seq), conv == AttentionFlops::causal ? 0.5 : 1.0);
  // Mirrors Megatron-LM megatron/training/training.py num_floating_point_operations (transformer path).
  const double B = double(global_batch), s = double(seq), h = double(m.hidden_size);
  const double fb = 3, fma = 2;  // forward+dgrad+wgrad; multiply-add
  const double ffn_exp = m.gated_mlp() ? 3 : 2;
  const double causal = conv == AttentionFlops::causal ? 0.5 : 1.0;
  int num_moe = m.num_moe_layers();
  int num_dense = m.num_layers - num_moe;
  int mtp = m.mtp_num_layers;
  if (mtp > 0) {
    bool last_moe = m.is_moe_layer(m.num_layers - 1);
    (last_moe ? num_moe : num_dense) += mtp;
  }
  int num_layers = m.num_layers + mtp;
  double attn;
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    double heads = m.num_attention_heads;
    double q_term = a.q_lora_rank > 0 ? a.q_lora_rank * (h + heads * (a.qk_head_dim + a.qk_rope_head_dim) + 1)
                                      : h * heads * (a.qk_head_dim + a.qk_rope_head_dim);
    attn = fb * fma *
           (q_term + a.kv_lora_rank * (h + heads * (a.qk_head_dim + a.v_head_dim) + 1) + h * a.qk_rope_head_dim +
            heads * a.v_head_dim * h + s * (heads * (a.qk_head_dim + a.qk_rope_head_dim)) * causal +
            s * heads * a.v_head_dim * causal);
  } else {
    double qp = double(m.kv_channels) * m.num_attention_heads;
    double kp = double(m.kv_channels) * m.num_query_groups;
    attn = fb * fma * (h * (qp + 2 * kp) + qp * s * causal * 2 + qp * h);
  }
  double moe_ffn = m.moe ? double(m.moe->moe_ffn_hidden_size) : 0;
  double topk = m.moe ? double(m.moe->top_k) : 0;
  double shared = m.moe ? double(m.moe->shared_expert_ffn_hidden_size) : 0;
  double mlp =
      fb * fma * h *
      (double(m.ffn_hidden_size) * ffn_exp * num_dense + moe_ffn * topk * ffn_exp * num_moe + shared * ffn_exp * num_moe);
  double mtp_proj = fb * fma * mtp * (3 * h + 2 * h * h);
  double logits = fb * fma * h * double(m.vocab_size) * (mtp + 1);
  return B * s * (mlp + attn * num_layers + mtp_proj + logits);
}

double model_flops_per_token(const ModelSpec& m, int64_t seq, AttentionFlops conv) {
  return model_flops_per_step(m, 1, seq, conv) / double(seq);
}

}  // namespace mplan
