// Search-space limits from --fix/--max (with their conflicts) and the layout rules the enumerator
// checks, each with a short stable name for the rejection counts. The rules mirror
// validate_layout() (core/parallel_config.cpp, with Megatron's own rules of core/megatron_rules.h for
// framework megatron) on the layouts the planner generates, plus the planner's own: tp stays inside an
// NVLink domain unless allowed, all-to-all context parallelism needs the heads to split over cp, and
// only what the job's framework runs (core/framework.h framework_runs) is searched.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/status.h"
#include "planner/layout.h"

namespace mplan::planner {

// Keys of --fix / --max. Integer layout sizes, plus (fix only) the coded choices below.
const std::vector<std::string>& numeric_keys();  // tp pp vpp cp ep etp dp mbs zero recompute_layers
const std::vector<std::string>& choice_keys();   // sp tp_comm_overlap recompute schedule cp_comm
// Codes of the choice keys: recompute none=0 selective=1 full=2; schedule gpipe=0 1f1b=1
// interleaved=2 zb=3; cp_comm p2p=0 a2a=1 allgather=2; sp and tp_comm_overlap 0/1.
std::optional<int> choice_code(const std::string& key, const std::string& value);

struct Limits {
  std::map<std::string, int> fix, max;
  bool allows(const std::string& key, int v) const {
    auto f = fix.find(key);
    if (f != fix.end() && f->second != v) return false;
    auto m = max.find(key);
    return m == max.end() || v <= m->second;
  }
  bool fixed(const std::string& key) const { return fix.count(key) > 0; }
  // The same for a literal key, without making a string when nothing is fixed or limited (the search
  // asks this for every structure and variant).
  bool allows(const char* key, int v) const { return (fix.empty() && max.empty()) || allows(std::string(key), v); }
  bool fixed(const char* key) const { return !fix.empty() && fixed(std::string(key)); }
};

// Unknown keys, out-of-range values and contradictions between --fix and --max (or within --fix)
// for a job of `gpus` GPUs; each problem names both sides ("--fix tp=16 conflicts with --max tp=8").
Status check_limits(const std::map<std::string, int>& fix, const std::map<std::string, int>& max, int gpus);
// --fix values the job's framework does not run (tp/pp/cp > 1 without that parallelism, a schedule,
// CP exchange or ZeRO level it lacks), each naming the framework's choices.
Status check_framework_limits(const std::map<std::string, int>& fix, Framework fw);
// What a search refuses before it starts: no GPU or more than the cluster holds, an empty batch or
// sequence, a precision the GPU has no peak for, and check_limits / check_framework_limits.
Status check_search_job(const Plan& job, const std::map<std::string, int>& fix, const std::map<std::string, int>& max);

// Rule names (keys of SearchStats::rejected_by_rule).
namespace rule {
inline constexpr const char* tp_heads = "tp does not divide num_attention_heads";
inline constexpr const char* tp_groups = "tp does not divide num_query_groups";
inline constexpr const char* tp_ffn = "tp does not divide ffn_hidden_size";
inline constexpr const char* tp_nvlink = "tp crosses the NVLink domain (--allow-tp-across-nvlink)";
inline constexpr const char* sp_seq = "seq not divisible by tp*cp (sequence parallel)";
inline constexpr const char* cp_seq = "seq not divisible by 2*cp (context parallel)";
inline constexpr const char* cp_a2a = "a2a context parallel needs heads/tp and query groups/tp divisible by cp";
inline constexpr const char* ep_experts = "ep does not divide num_experts";
inline constexpr const char* ep_tiling = "ep*etp does not divide tp*cp*dp";
inline constexpr const char* etp_ffn = "etp does not divide moe_ffn_hidden_size";
inline constexpr const char* etp_bias = "MoE with linear biases needs etp=1 (Megatron)";
inline constexpr const char* gbs_dp = "gbs not a multiple of mbs*dp";
inline constexpr const char* interleaved_m = "interleaved schedule needs micro-batches divisible by pp";
inline constexpr const char* vpp_pp = "vpp > 1 needs pp > 1";
inline constexpr const char* chunks = "more pipeline chunks than layers (pp*vpp)";
inline constexpr const char* layers_split = "layers do not split evenly over pp*vpp and no balanced layout was allowed";
inline constexpr const char* limits = "outside --fix/--max";
inline constexpr const char* framework = "not run by the job's framework (--framework)";
inline constexpr const char* cp_attention = "CP exchange without support for the model's attention (Transformer Engine)";
inline constexpr const char* cp_unfused = "context parallelism needs the fused attention (Transformer Engine)";
inline constexpr const char* fp8_shape = "fp8 GEMM shape not divisible by 16/8 (Transformer Engine)";
}  // namespace rule

// The job a search runs for, with the derived numbers the rules need.
struct Job {
  const Plan* plan = nullptr;  // model, cluster, training; parallel.world_size and attention backend
  int world = 0;
  int domain = 8;  // GPUs per NVLink placement domain
  int units = 0;   // pipeline units: layers + embedding + loss (+2 per MTP layer)
  bool mla = false, moe = false;
  explicit Job(const Plan& p);
  const ModelSpec& model() const { return plan->model; }
  int64_t gbs() const { return plan->training.global_batch_size; }
  int64_t seq() const { return plan->training.seq_length; }
};

// First rule (by name) that `l` breaks for `job`, or nullopt. Covers every rule the enumerator
// applies, including the planner-only ones when `planner_rules` (tp_nvlink unless allowed, cp_a2a,
// framework).
std::optional<const char*> first_broken_rule(const Job& job, const Layout& l, bool allow_tp_across_nvlink,
                                             bool planner_rules = true);
// The rule of core/megatron_rules.h that `l` breaks for a framework-megatron job (fp8_shape, cp_unfused,
// cp_attention), or nullopt; nullopt for other frameworks.
std::optional<const char*> megatron_rule(const Job& job, const Layout& l);
// Whether the job's framework runs `l` (core/framework.h: tp, cp exchange, schedule, split, micro-batches
// and ZeRO level).
bool framework_runs_layout(const Job& job, const Layout& l);

}  // namespace mplan::planner
