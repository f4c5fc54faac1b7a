// The check of a log's configuration against the plan it is imported with. Every value that sets the
// model's FLOPs or the job's memory is compared: layout (world, tp, pp, vpp, cp, ep, etp, dp, sequence
// parallelism), batch (micro, global), sequence length, model shape (layers, hidden, ffn, heads,
// query groups, kv_channels, padded vocabulary, gated MLP, tied embeddings, MLA ranks, MTP layers),
// MoE (experts, top-k, expert FFN, shared expert, which layers are MoE), precision, recompute and
// the optimizer sharding. Sources: Megatron-LM's and Megatron-DeepSpeed's "arguments" block (their
// different names: num_key_value_heads, topk, expert_interval, moe_expert_parallel_size,
// ds_sequence_parallel_size, zero_stage) and Megatron-Bridge's YAML dump (dotted paths; the
// sequence length is the dataset's, since the model provider's may differ).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"

namespace mplan::runs {

// One configuration value of a log: as printed, and normalized for comparison.
struct LogField {
  std::string name;        // as the log names it: "ffn_hidden_size", "model.ffn_hidden_size"
  std::string printed;     // as printed
  std::string normalized;  // canonical form (integers, True/False, precision names, MoE layer pattern)
};

enum class ConfigSource { none, megatron_args, deepspeed_args, bridge_yaml };
std::string to_string(ConfigSource s);

// The configuration a launch printed, keyed by canonical names (see plan_check.cpp, kFields).
struct LogConfig {
  ConfigSource source = ConfigSource::none;
  std::map<std::string, LogField> fields;
  std::vector<std::string> notes;  // how ambiguous values were read
  bool empty() const { return fields.empty(); }
};

struct PaddedVocab {
  int64_t original = 0, padded = 0;
};

// Reads the configuration of a launch: Megatron-DeepSpeed when `args` carries its names (deepspeed,
// num_key_value_heads, zero_stage ...), Megatron-LM for other argument blocks, Megatron-Bridge for a
// YAML dump. `padded` is the "> padded vocab" line when the log printed one.
LogConfig read_log_config(const std::map<std::string, std::string>& args, const std::map<std::string, std::string>& bridge_yaml,
                          const std::optional<PaddedVocab>& padded);

// Every difference between the log's configuration and the plan, one sentence each:
// "log argument ffn_hidden_size = 14336 but the plan has model.ffn_hidden_size = 11008".
std::vector<std::string> check_plan(const LogConfig& log, const Plan& plan);

// Canonical names of two configurations whose values differ (both present): used to tell a resumed
// job (same configuration) from a new job in the same file.
std::vector<std::string> config_differences(const LogConfig& a, const LogConfig& b);

// The framework a launch came from, from its configuration and line dialect:
// Megatron-LM | Megatron-DeepSpeed | Megatron-Bridge | NeMo.
std::string framework_name(ConfigSource source, bool deepspeed_lines, bool bridge_memory, bool nemo_lines);

}  // namespace mplan::runs
