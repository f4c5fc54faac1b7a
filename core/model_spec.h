// ModelSpec: a decoder-only transformer (dense or MoE, optional MLA and MTP), or a hybrid of Mamba-2,
// attention, MLP and MoE layers (Megatron's hybrid model), with Megatron's names.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/activation_options.h"
#include "core/status.h"

namespace mplan {

enum class Activation { gelu, swiglu, squared_relu };
enum class NormKind { layernorm, rmsnorm };
// rope: rotary positions applied to Q and K in every attention layer; learned: a learned absolute
// table added at the embedding (GPT-2/GPT-3); none: no position op anywhere (ALiBi's bias inside the
// attention kernel, MPT; the Nemotron-H / Nemotron 3 hybrids, whose Mamba layers carry the order).
enum class PositionEmbedding { rope, learned, none };
enum class RopeScalingType { none, llama3, yarn };
enum class RouterScore { softmax, sigmoid };
// Megatron's --softmax-type: vanilla attention, or a softmax with a sink (off-by-one: a constant 1 in
// the denominator; learnable: one learned sink logit per head, gpt-oss).
enum class SoftmaxType { vanilla, off_by_one, learnable };
// The names of the enums' values (core/activation_options.h: to_string, parse_enum, enum_names).
constexpr const char* enum_names_text(Activation) { return "gelu,swiglu,squared_relu"; }
constexpr const char* enum_names_text(NormKind) { return "layernorm,rmsnorm"; }
constexpr const char* enum_names_text(PositionEmbedding) { return "rope,learned,none"; }
constexpr const char* enum_names_text(RopeScalingType) { return "none,llama3,yarn"; }
constexpr const char* enum_names_text(RouterScore) { return "softmax,sigmoid"; }
constexpr const char* enum_names_text(SoftmaxType) { return "vanilla,off-by-one,learnable"; }  // Megatron's spelling

// RoPE frequency scaling (Hugging Face rope_scaling). llama3: Llama-3.1's piecewise rescaling of the
// low frequencies; yarn: YaRN (DeepSeek-V3, Kimi-K2, gpt-oss). Fields a type does not use keep defaults.
struct RopeScaling {
  RopeScalingType type = RopeScalingType::none;
  double factor = 1.0;
  int64_t original_max_position_embeddings = 0;  // the pre-extension context (llama3 8192, yarn 4096)
  double low_freq_factor = 1.0;                  // llama3
  double high_freq_factor = 4.0;                 // llama3
  double beta_fast = 32.0;                       // yarn
  double beta_slow = 1.0;                        // yarn
  double mscale = 1.0;                           // yarn
  double mscale_all_dim = 0.0;                   // yarn
};

struct MoeSpec {
  int num_experts = 0;
  int top_k = 1;
  int64_t moe_ffn_hidden_size = 0;            // routed expert FFN width
  int64_t shared_expert_ffn_hidden_size = 0;  // 0 = no shared expert
  int first_k_dense_layers = 0;               // leading layers with a dense MLP (DeepSeek)
  int moe_layer_freq = 1;                     // layer i >= first_k is MoE when i % freq == 0
  // Router (Megatron's --moe-router-*): score function, the aux-loss-free per-expert bias (DeepSeek-V3),
  // group-limited routing (experts in num_groups equal groups; a token picks experts from group_topk of
  // them: node-limited routing when groups map to nodes) and the routed-weight scaling factor.
  RouterScore router_score_function = RouterScore::softmax;
  bool router_enable_expert_bias = false;
  int router_num_groups = 0;  // 0 = no group-limited routing
  int router_group_topk = 0;
  double router_topk_scaling_factor = 1.0;  // 1 = none
  // Latent MoE (Megatron's --moe-latent-size; Nemotron 3 Super): tokens are projected from hidden_size
  // to this width before dispatch (a replicated linear), the routed experts work at it, and a second
  // linear projects their combined output back; the router and the shared expert see the full width.
  int64_t moe_latent_size = 0;  // 0 = none
};

// Mamba-2 mixer (Megatron-Core's MambaMixer, megatron/core/ssm/mamba_mixer.py): heads of head_dim
// channels (d_inner = num_heads * head_dim), an SSM state of state_dim per head, B and C shared within
// num_groups groups, a depthwise causal conv1d of conv_kernel taps, the SSD scan in chunks of chunk_size.
struct MambaSpec {
  int num_heads = 0;  // --mamba-num-heads
  int head_dim = 64;  // --mamba-head-dim
  int state_dim = 128;
  int num_groups = 8;
  int conv_kernel = 4;   // d_conv (Megatron-Core fixes 4)
  int chunk_size = 128;  // the SSD kernels' chunk length
  int64_t d_inner() const { return int64_t(num_heads) * head_dim; }
  // in_proj output width per token: z and x (d_inner each), B and C (groups x state), dt (one per head)
  int64_t in_proj_width() const { return 2 * d_inner() + 2 * int64_t(num_groups) * state_dim + num_heads; }
  // channels of the conv1d: x, B and C
  int64_t conv_width() const { return d_inner() + 2 * int64_t(num_groups) * state_dim; }
};

// What a layer holds: a transformer layer (attention + dense MLP or MoE), or, in a hybrid model, one of
// Megatron's hybrid layer symbols: M a Mamba-2 mixer, * attention, - an MLP, E an MoE (each with its
// pre-norm and residual).
enum class LayerKind { transformer, mamba, attention, mlp, moe };

struct MlaSpec {
  int q_lora_rank = 0;  // 0 = no query compression
  int kv_lora_rank = 0;
  int qk_head_dim = 0;  // non-rope part of the q/k head
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

struct ModelSpec {
  std::string name;
  int num_layers = 0;
  int64_t hidden_size = 0;
  int64_t ffn_hidden_size = 0;  // default 4*hidden
  int num_attention_heads = 0;
  int num_query_groups = 0;  // default = heads (MHA)
  int kv_channels = 0;       // head dim; default hidden/heads
  int64_t vocab_size = 0;
  Activation activation = Activation::gelu;
  NormKind norm = NormKind::layernorm;
  bool tied_embeddings = true;
  PositionEmbedding position_embedding = PositionEmbedding::rope;
  int64_t max_position_embeddings = 0;  // learned positions only
  bool add_bias_linear = false;         // biases on every linear layer (GPT-2, GPT-3, NeoX)
  bool add_qkv_bias = false;            // biases on the QKV projection only (Qwen2)
  bool qk_layernorm = false;            // per-head norms of q and k (Qwen3); with MLA the q and kv latent norms
  double norm_epsilon = 1e-5;           // every LayerNorm/RMSNorm (Megatron's --norm-epsilon)
  // RoPE (position_embedding = rope): base, the fraction of each head's dimensions rotated, scaling.
  double rotary_base = 10000;
  double rotary_percent = 1.0;
  RopeScaling rope_scaling;
  // Sliding-window attention: a token attends to the window_size most recent tokens (itself included;
  // Megatron's --window-size window_size-1,0). window_attn_skip_freq N: every N-th layer (1-based) is
  // full attention, the others windowed (Megatron's --window-attn-skip-freq); 0 = every layer windowed.
  int64_t window_size = 0;  // 0 = full attention everywhere
  int window_attn_skip_freq = 0;
  SoftmaxType softmax_type = SoftmaxType::vanilla;  // attention sinks
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;
  // Hybrid model (Megatron's --hybrid-override-pattern): one symbol per layer, M (Mamba-2), * (attention),
  // - (MLP), E (MoE); its length is num_layers. Empty: every layer is a transformer layer.
  std::string hybrid_override_pattern;
  std::optional<MambaSpec> mamba;
  int mtp_num_layers = 0;
  // Dropout probabilities (Megatron's --hidden-dropout / --attention-dropout). mplan's default is 0, as
  // in current LLM pre-training recipes, not Megatron-LM's 0.1: set them for GPT-3-era setups. They
  // change memory (dropout masks are saved for the backward) but not FLOPs.
  double hidden_dropout = 0.0;
  double attention_dropout = 0.0;

  bool is_moe() const { return moe.has_value(); }
  bool is_hybrid() const { return !hybrid_override_pattern.empty(); }
  LayerKind layer_kind(int layer) const;
  // Whether layer `layer` routes tokens to experts (a transformer MoE layer, or a hybrid E layer).
  bool is_moe_layer(int layer) const;
  int num_moe_layers() const;
  int head_dim() const { return kv_channels; }
  // Widths of the attention projections per token (q, k, v, output input), MLA-aware.
  int64_t q_proj_width() const;
  int64_t kv_proj_width() const;  // k width (= v width for GQA)
  int64_t v_proj_width() const;
  bool gated_mlp() const { return activation == Activation::swiglu; }
  // Whether layer `layer` (0-based) uses the sliding window.
  bool is_window_layer(int layer) const;
  // Keys a query of a causal sequence of length `seq` attends to, summed over the sequence, as a
  // fraction of the causal s(s+1)/2 (1 = full causal attention); for a windowed layer.
  double window_attention_fraction(int64_t seq) const;
  // The same fraction when the sequence packs documents of `doc` tokens (attention stays within each,
  // THD format): about doc / seq; `windowed` also applies the sliding window. doc <= 0: one document.
  double attention_fraction(int64_t seq, int64_t doc, bool windowed) const;
};

// Parses an mplan model JSON (Megatron field names). Missing optional fields take Megatron's
// defaults (num_query_groups = heads, kv_channels = hidden/heads, ffn_hidden_size = 4*hidden).
Expected<ModelSpec> model_from_json(const nlohmann::json& j);
nlohmann::json model_to_json(const ModelSpec& m);
// Every rule the spec breaks, as messages.
std::vector<std::string> validate_model(const ModelSpec& m);

}  // namespace mplan
