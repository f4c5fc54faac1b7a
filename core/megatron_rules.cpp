// Megatron-LM's and Transformer Engine's assertions on a layout (see megatron_rules.h).
#include "core/megatron_rules.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace mplan {

namespace {

// Megatron-FSDP's sharding strategies, indexed by the ZeRO level each is.
constexpr const char* kFsdpStrategies[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};

std::string s(int64_t v) { return std::to_string(v); }

// "" or the first GEMM dimension of `what` that breaks TE's fp8 shape check: an input width (the
// GEMM's K) not divisible by 16, a weight's row count (N) not divisible by 8.
struct Dims {
  std::string problem;
  void width(int64_t v, const std::string& what) {
    if (problem.empty() && v % 16 != 0) problem = what + " = " + s(v) + " is not divisible by 16";
  }
  void rows(int64_t v, const std::string& what) {
    if (problem.empty() && v % 8 != 0) problem = what + " = " + s(v) + " is not divisible by 8";
  }
};

// Expands Megatron's layout grammar into a flat string of symbols.
bool expand(const std::string& s, size_t& i, std::string& out, int depth) {
  if (depth > 8) return false;
  while (i < s.size() && s[i] != ')') {
    std::string item;
    if (s[i] == '(') {
      ++i;
      if (!expand(s, i, item, depth + 1) || i >= s.size() || s[i] != ')') return false;
      ++i;
    } else {
      item = std::string(1, s[i++]);
    }
    int rep = 1;
    if (i < s.size() && s[i] == '*') {
      ++i;
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      if (j == i || j - i > 4) return false;
      rep = std::stoi(s.substr(i, j - i));
      i = j;
    }
    for (int k = 0; k < rep; ++k) out += item;
    if (out.size() > 100000) return false;
  }
  return true;
}

}  // namespace

bool megatron_cp_comm_ok(const ModelSpec& m, CpCommType c) {
  // context_parallel.py:5057 "Context parallelism does not support sliding window attention with
  // cp_comm_type=..." (a2a and all_gather only)
  if (m.window_size > 0 && c != CpCommType::a2a && c != CpCommType::allgather) return false;
  // context_parallel.py:5066 "Context parallelism only supports softmax_type=... with cp_comm_type = 'a2a'"
  if (m.softmax_type != SoftmaxType::vanilla && c != CpCommType::a2a) return false;
  return true;
}

std::string megatron_fp8_tp_problem(const ModelSpec& m, Precision prec, int tp) {
  if (!is_fp8_family(prec) || tp < 1 || m.num_attention_heads % tp != 0 || m.ffn_hidden_size % tp != 0 ||
      (!m.mla && m.num_query_groups % tp != 0))
    return "";  // validate_layout's own rules reject such a tp
  Dims d;
  const std::string per = tp > 1 ? "/tp" : "";
  d.width(m.hidden_size, "hidden_size");
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    d.width(m.num_attention_heads * a.v_head_dim / tp, "heads*v_head_dim" + per);
    d.rows(m.num_attention_heads * (a.qk_head_dim + a.qk_rope_head_dim) / tp, "heads*(qk_head_dim+qk_rope_head_dim)" + per);
    d.rows(m.num_attention_heads * (a.qk_head_dim + a.v_head_dim) / tp, "heads*(qk_head_dim+v_head_dim)" + per);
    if (a.q_lora_rank > 0) d.width(a.q_lora_rank, "q_lora_rank");
    d.width(a.kv_lora_rank, "kv_lora_rank");
  } else {
    d.width(m.num_attention_heads * m.kv_channels / tp, "heads*kv_channels" + per);
    d.rows((m.num_attention_heads + 2 * m.num_query_groups) * m.kv_channels / tp, "(heads+2*query_groups)*kv_channels" + per);
  }
  const int gate = m.gated_mlp() ? 2 : 1;
  if (!m.moe || m.num_moe_layers() < m.num_layers) {  // dense MLP layers
    d.width(m.ffn_hidden_size / tp, "ffn_hidden_size" + per);
    d.rows(gate * m.ffn_hidden_size / tp, (gate == 2 ? "2*ffn_hidden_size" : "ffn_hidden_size") + per);
  }
  if (m.moe && m.moe->shared_expert_ffn_hidden_size > 0)
    d.width(m.moe->shared_expert_ffn_hidden_size / tp, "shared_expert_ffn_hidden_size" + per);
  return d.problem.empty() ? "" : "tp=" + s(tp) + ": " + d.problem;
}

std::string megatron_fp8_etp_problem(const ModelSpec& m, Precision prec, int etp) {
  if (!is_fp8_family(prec) || !m.moe || etp < 1 || m.moe->moe_ffn_hidden_size % etp != 0) return "";
  Dims d;
  const std::string per = etp > 1 ? "/etp" : "";
  const int gate = m.gated_mlp() ? 2 : 1;
  d.width(m.moe->moe_ffn_hidden_size / etp, "moe_ffn_hidden_size" + per);
  d.rows(gate * m.moe->moe_ffn_hidden_size / etp, (gate == 2 ? "2*moe_ffn_hidden_size" : "moe_ffn_hidden_size") + per);
  return d.problem.empty() ? "" : "etp=" + s(etp) + ": " + d.problem;
}

bool megatron_fp8_tokens_ok(Precision prec, int64_t mbs, int64_t seq, int cp, int tp, bool sp) {
  if (!is_fp8_family(prec)) return true;
  const int64_t div = int64_t(cp) * (sp ? tp : 1);
  if (div < 1 || (mbs * seq) % div != 0) return true;  // other rules reject such splits
  return (mbs * seq / div) % 8 == 0;
}

bool megatron_moe_grouped_gemm(Precision prec) { return prec != Precision::fp32 && prec != Precision::tf32; }

std::optional<int> megatron_fsdp_zero(const std::string& strategy) {
  for (int z = 0; z < 4; ++z)
    if (strategy == kFsdpStrategies[z]) return z;
  return std::nullopt;
}

const char* megatron_fsdp_strategy(int zero) { return kFsdpStrategies[std::clamp(zero, 0, 3)]; }

int megatron_layers_per_virtual_stage(int num_layers, int pp, int vpp) { return pp * vpp > 0 ? num_layers / (pp * vpp) : 0; }
int megatron_vpp_of(int num_layers, int pp, int layers_per_virtual_stage) {
  return pp > 0 && layers_per_virtual_stage > 0 ? num_layers / pp / layers_per_virtual_stage : 0;
}

std::string megatron_pipeline_layout(const std::vector<std::vector<int>>& layers, int mtp_layers) {
  const int pp = int(layers.size()), total = pp > 0 ? pp * int(layers[0].size()) : 0;
  std::string out;
  for (int k = 0; k < total; ++k) {
    const int t = layers[size_t(k % pp)][size_t(k / pp)];
    out += std::string(k ? "|" : "") + (k == 0 ? "E" : "") + (t == 1 ? "t" : t > 1 ? "t*" + s(t) : "");
    if (k == total - 1) out += std::string(size_t(mtp_layers), 'm') + "L";
  }
  return out;
}

std::vector<std::vector<int>> parse_megatron_pipeline_layout(const std::string& s, int pp, int vpp) {
  std::string flat;
  size_t i = 0;
  if (!expand(s, i, flat, 0) || i != s.size()) return {};
  std::vector<int> segments(1, 0);
  for (char c : flat) {
    if (c == '|')
      segments.push_back(0);
    else if (c == 't')
      ++segments.back();
    else if (c != 'E' && c != 'L' && c != 'm')
      return {};
  }
  if (pp > 0 && vpp == 0 && segments.size() % size_t(pp) == 0) vpp = int(segments.size()) / pp;
  if (pp < 1 || vpp < 1 || int(segments.size()) != pp * vpp) return {};
  std::vector<std::vector<int>> out(size_t(pp), std::vector<int>(size_t(vpp), 0));
  for (int k = 0; k < pp * vpp; ++k) out[size_t(k % pp)][size_t(k / pp)] = segments[size_t(k)];  // model order is chunk-major
  return out;
}

bool megatron_fp8_tensorwise(Precision prec, const ParallelConfig& p) {
  const RecomputeModules r = p.effective_recompute_modules();
  return prec == Precision::fp8 && (r.has(RecomputeModule::layernorm) || r.has(RecomputeModule::moe_act));
}

std::vector<std::string> megatron_precision_args(Precision prec, const ParallelConfig& p) {
  switch (prec) {
    case Precision::bf16:
      return {"--bf16"};
    case Precision::fp16:
      return {"--fp16"};
    case Precision::fp8:
      if (megatron_fp8_tensorwise(prec, p)) return {"--bf16", "--fp8-format hybrid", "--fp8-recipe tensorwise"};
      return {"--bf16", "--fp8-format hybrid"};
    case Precision::mxfp8:
      return {"--bf16", "--fp8-format e4m3", "--fp8-recipe mxfp8"};
    case Precision::nvfp4:
      return {"--bf16", "--fp4-format e2m1"};
    default:
      return {};  // fp32: Megatron's default
  }
}

Precision megatron_precision(bool bf16, bool fp16, bool fp8, const std::string& fp8_recipe, bool fp4) {
  if (fp4) return Precision::nvfp4;
  if (fp8) return fp8_recipe == "mxfp8" ? Precision::mxfp8 : Precision::fp8;
  return bf16 ? Precision::bf16 : fp16 ? Precision::fp16 : Precision::fp32;
}

void megatron_layout_rules(const ModelSpec& m, const TrainingSpec& t, const ParallelConfig& p, std::vector<std::string>& e) {
  if (p.cp > 1 && !megatron_cp_comm_ok(m, p.cp_comm_type))
    e.push_back("cp_comm_type " + to_string(p.cp_comm_type) + ": Transformer Engine runs context parallelism for " +
                (m.softmax_type != SoftmaxType::vanilla
                     ? "attention sinks (softmax_type " + to_string(m.softmax_type) + ") only with a2a"
                     : std::string("sliding-window attention only with a2a or allgather")) +
                " (context_parallel.py attn_forward_func_with_cp)");
  // dot_product_attention/utils.py get_attention_backend: "Disabling UnfusedDotProductAttention as it
  // does not support context parallelism"
  if (p.cp > 1 && p.attention_backend == AttentionBackend::unfused)
    e.push_back("cp=" + s(p.cp) +
                " with attention backend unfused: Transformer Engine's unfused attention has no context "
                "parallelism; use the fused attention or cp=1");
  if (auto d = megatron_fp8_tp_problem(m, t.precision, p.tp); !d.empty())
    e.push_back(d + ", as Transformer Engine's " + std::string(to_string(t.precision)) +
                " GEMMs require (utils.py assert_dim_for_fp8_exec); choose another tp");
  if (auto d = megatron_fp8_etp_problem(m, t.precision, p.etp); !d.empty())
    e.push_back(d + ", as Transformer Engine's " + std::string(to_string(t.precision)) +
                " GEMMs require (utils.py assert_dim_for_fp8_exec); choose another etp");
  if (!megatron_fp8_tokens_ok(t.precision, p.micro_batch_size, t.seq_length, p.cp, p.tp, p.sp && p.tp > 1))
    e.push_back("micro_batch_size*seq_length/(cp" + std::string(p.sp && p.tp > 1 ? "*tp" : "") +
                ") is not divisible by 8, as "
                "Transformer Engine's fp8 GEMMs require of the tokens (utils.py assert_dim_for_fp8_exec)");
  // transformer_config.py __post_init__: "moe_act in recompute_modules is only supported with moe_grouped_gemm."
  if (m.moe && p.effective_recompute_modules().has(RecomputeModule::moe_act) && !megatron_moe_grouped_gemm(t.precision))
    e.push_back(
        "recompute module 'moe_act' needs Megatron's --moe-grouped-gemm, which mplan runs with bf16, fp16 and the "
        "fp8/fp4 precisions, not " +
        std::string(to_string(t.precision)) +
        " (transformer_config.py: 'moe_act in "
        "recompute_modules is only supported with moe_grouped_gemm')");
}

std::string megatron_moe_layer_freq(const ModelSpec& m) {
  const MoeSpec& e = *m.moe;
  if (e.first_k_dense_layers == 0) return std::to_string(e.moe_layer_freq);
  int moe_run = 0;
  for (int i = e.first_k_dense_layers; i < m.num_layers; ++i) moe_run += m.is_moe_layer(i) ? 1 : 0;
  if (e.moe_layer_freq == 1) return "([0]*" + std::to_string(e.first_k_dense_layers) + "+[1]*" + std::to_string(moe_run) + ")";
  std::string s = "[";  // general pattern: every layer
  for (int i = 0; i < m.num_layers; ++i) s += std::string(i ? "," : "") + (m.is_moe_layer(i) ? "1" : "0");
  return s + "]";
}

bool megatron_read_moe_layer_freq(const std::string& text, int num_layers, MoeSpec& e) {
  std::smatch mt;
  if (std::regex_match(text, mt, std::regex(R"(\d{1,9})"))) {
    e.moe_layer_freq = std::stoi(text);
    return true;
  }
  if (std::regex_match(text, mt, std::regex(R"(\(\[0\]\*(\d{1,9})\+\[1\]\*(\d{1,9})\))"))) {
    e.first_k_dense_layers = std::stoi(mt[1]);
    e.moe_layer_freq = 1;
    return true;
  }
  std::vector<int> bits;
  for (char c : text)
    if (c == '0' || c == '1') bits.push_back(c - '0');
  if (int(bits.size()) != num_layers || text.empty() || text.front() != '[') return false;
  int k = 0;
  while (k < num_layers && bits[size_t(k)] == 0) ++k;
  for (int f = 1; f <= num_layers; ++f) {
    bool ok = true;
    for (int i = k; i < num_layers && ok; ++i) ok = bits[size_t(i)] == (i % f == 0 ? 1 : 0);
    if (ok) {
      e.first_k_dense_layers = k, e.moe_layer_freq = f;
      return true;
    }
  }
  return false;
}

std::string megatron_window_size(int64_t window) { return std::to_string(window - 1) + ",0"; }

int64_t megatron_window_of(const std::string& text) {
  std::smatch wm;
  if (!std::regex_match(text, wm, std::regex(R"(\(?(\d{1,9}),\s*(\d+)\)?)")) || wm[2] != "0") return 0;
  return std::stoll(wm[1]) + 1;
}

}  // namespace mplan
