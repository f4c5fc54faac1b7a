// Fine-grained activation memory options of a layout: Megatron-Core's selective recompute modules
// (--recompute-modules) and fine-grained activation offloading modules (--offload-modules), as small
// bit sets with their Megatron names. Which activations each one removes is defined where the ops
// are built (core/ops.cpp, Op::module) and documented in docs/memory.md. Also the one name table of
// the plan's enums (enum_names_text: to_string, parse_enum, enum_names), beside its list splitter.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mplan {

// --recompute-modules (megatron/core/transformer/transformer_config.py, recompute_modules).
enum class RecomputeModule : uint32_t {
  core_attn = 1u << 0,       // core attention (keeps Q, K, V; drops softmax statistics / unfused scores)
  layernorm = 1u << 1,       // input_layernorm and pre_mlp_layernorm outputs (output-discarding)
  mlp = 1u << 2,             // the dense MLP (keeps its input)
  moe = 1u << 3,             // the whole MoE layer (keeps its input)
  moe_act = 1u << 4,         // the expert activation output (fc2 input)
  mla_up_proj = 1u << 5,     // MLA q/kv up-projections + RoPE (Q, K, V of core attention)
  shared_experts = 1u << 6,  // the shared-expert MLP
};
// --offload-modules of fine-grained activation offloading: each offloads its input to host memory.
enum class OffloadModule : uint32_t {
  attn_norm = 1u << 0,
  qkv_linear = 1u << 1,
  core_attn = 1u << 2,
  attn_proj = 1u << 3,
  mlp_norm = 1u << 4,
  expert_fc1 = 1u << 5,
  moe_act = 1u << 6,
};

// JAX remat (activation checkpoint) policies of MaxText / Paxml: which named tensors of a layer are
// saved (layers/models.py checkpoint names; Paxml SAVE_DOT_ONLY = every dot output = "minimal").
enum class RematTensor : uint32_t {
  layer_input = 1u << 0,  // decoder_layer_input (the scan carry; always saved)
  qkv = 1u << 1,          // query_proj, key_proj, value_proj (after RoPE)
  out_proj = 1u << 2,     // the attention output projection's output
  mlpwi = 1u << 3,        // mlpwi_0 / mlpwi_1 (gate and up projections' outputs)
  mlpwo = 1u << 4,        // the MLP output projection's output
};
enum class RematPolicy { none, full, save_qkv_proj, save_out_proj, save_dot_except_mlp, save_dot_except_mlpwi, minimal };
// RematTensor bits a policy saves.
uint32_t remat_saved_tensors(RematPolicy p);

// A set of modules as a bit mask; names in Megatron's spelling, in declaration order.
template <typename E>
struct ModuleSet {
  uint32_t bits = 0;
  bool has(E e) const { return (bits & uint32_t(e)) != 0; }
  bool empty() const { return bits == 0; }
  void add(E e) { bits |= uint32_t(e); }
  bool operator==(const ModuleSet& o) const { return bits == o.bits; }
};
using RecomputeModules = ModuleSet<RecomputeModule>;
using OffloadModules = ModuleSet<OffloadModule>;

const std::vector<std::pair<std::string, RecomputeModule>>& recompute_module_names();
const std::vector<std::pair<std::string, OffloadModule>>& offload_module_names();
std::vector<std::string> to_names(RecomputeModules s);
std::vector<std::string> to_names(OffloadModules s);
// "a,b,c" or a list of names -> set; the first unknown name is returned in `bad`.
std::optional<RecomputeModules> parse_recompute_modules(const std::vector<std::string>& names, std::string* bad);
std::optional<OffloadModules> parse_offload_modules(const std::vector<std::string>& names, std::string* bad);
std::vector<std::string> split_list(const std::string& csv);
std::string join_names(const std::vector<std::string>& v, const char* sep = ",");

// The one name table of mplan's plan enums: enum_names_text(E) lists the names of E's values in
// declaration order, comma-separated (value i is the i-th name); from it to_string, parse_enum and the
// choices of the enum's plan field and option.
constexpr const char* enum_names_text(RematPolicy) {
  return "none,full,save_qkv_proj,save_out_proj,save_dot_except_mlp,save_dot_except_mlpwi,minimal";
}
template <class E, class = decltype(enum_names_text(E{}))>
const std::vector<std::string>& enum_names() {
  static const std::vector<std::string> names = split_list(enum_names_text(E{}));
  return names;
}
template <class E, class = decltype(enum_names_text(E{}))>
std::string to_string(E e) {
  const auto& n = enum_names<E>();
  return size_t(e) < n.size() ? n[size_t(e)] : "?";
}
template <class E>
std::optional<E> parse_enum(const std::string& s) {
  const auto& n = enum_names<E>();
  for (size_t i = 0; i < n.size(); ++i)
    if (n[i] == s) return E(i);
  return std::nullopt;
}

}  // namespace mplan
