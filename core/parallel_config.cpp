// ParallelConfig JSON, layout validation rules and the layer split over pipeline stages and chunks.
#include "core/parallel_config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>

#include "core/framework_profile.h"
#include "core/json_fields.h"
#include "core/limits.h"
#include "core/megatron_rules.h"
#include "core/parallel_fields.h"

namespace mplan {

using nlohmann::json;

namespace {
// One field from the plan JSON into p (the fields before it are read: derived defaults follow them).
void read_field(JsonFields& f, const json& j, const ParallelField& d, ParallelConfig& p) {
  if (d.derive) d.derive(p);
  const FieldAccess& a = d.access;
  switch (d.type()) {
    case FieldType::integer:
      p.*a.i = static_cast<int>(d.presence == Presence::required ? f.integer(d.json, int64_t(d.min), int64_t(d.max))
                                                                 : f.integer_or(d.json, p.*a.i, int64_t(d.min), int64_t(d.max)));
      return;
    case FieldType::boolean:
      p.*a.b = f.boolean_or(d.json, p.*a.b);
      return;
    case FieldType::number:
      if (auto v = f.opt_number(d.json)) p.*a.d = *v;
      return;
    case FieldType::choice:
      a.set(p, f.choice_or(d.json, a.choices(), a.get(p)));
      return;
    case FieldType::modules:
    case FieldType::layout:
      break;
  }
  if (!f.has(d.json)) return;
  const json& v = j[d.json];
  bool ok = v.is_array();
  if (d.type() == FieldType::layout) {
    std::vector<std::vector<int>> rows;
    for (const auto& st : v) {
      ok = ok && st.is_array();
      std::vector<int> row;
      for (const auto& x : st) {
        ok = ok && x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= kMaxLayers;
        if (ok) row.push_back(x.get<int>());
      }
      rows.push_back(row);
    }
    if (ok) p.*a.l = rows;
    if (!ok) f.problem(d.json, "expected [[layers per chunk] per stage] of integers in 0.." + std::to_string(kMaxLayers));
    return;
  }
  std::string names;  // modules: "a,b"
  for (const auto& x : v) {
    ok = ok && x.is_string();
    if (ok) names += (names.empty() ? "" : ",") + x.get<std::string>();
  }
  std::string bad = ok ? a.set(p, names) : "expected a list of names; valid: " + join_names(a.choices(), "|");
  if (!bad.empty()) f.problem(d.json, bad);
}

json field_json(const ParallelField& d, const ParallelConfig& p) {
  const FieldAccess& a = d.access;
  switch (d.type()) {
    case FieldType::integer:
      return p.*a.i;
    case FieldType::boolean:
      return p.*a.b;
    case FieldType::number:
      return p.*a.d;
    case FieldType::choice:
      return a.get(p);
    case FieldType::modules:
      return split_list(a.get(p));
    case FieldType::layout:
      return p.*a.l;
  }
  return nullptr;
}
}  // namespace

Expected<ParallelConfig> parallel_from_json(const json& j) {
  std::vector<std::string> problems;
  JsonFields f(j, "parallel", problems);
  if (!problems.empty()) return Error(problems);
  std::vector<std::string> known = {"dp"};
  for (const ParallelField& d : parallel_fields()) known.emplace_back(d.json);
  f.reject_unknown(known);
  ParallelConfig p;
  for (const ParallelField& d : parallel_fields()) read_field(f, j, d, p);
  if (auto dp = f.opt_integer("dp")) {
    int derived = p.dp();
    if (*dp != derived)
      f.problem("dp", std::to_string(*dp) + " disagrees with world_size/(tp*pp*cp) = " + std::to_string(derived) +
                          "; dp is derived, drop the field or fix world_size");
  }
  if (!problems.empty()) return Error(problems);
  return p;
}

json parallel_to_json(const ParallelConfig& p) {
  static const ParallelConfig defaults;
  json j = {{"dp", p.dp()}};
  for (const ParallelField& d : parallel_fields()) {
    bool write = d.written ? d.written(p) : d.presence != Presence::if_set || field_text(d, p) != field_text(d, defaults);
    if (write) j[d.json] = field_json(d, p);
  }
  return j;
}

namespace {
std::string s(int64_t v) { return std::to_string(v); }

// Layers per pipeline stage (before chunking), or a problem message.
std::vector<int> stage_layers(const ModelSpec& m, const ParallelConfig& p, std::vector<std::string>* problems) {
  int L = m.num_layers, first = p.num_layers_in_first_pipeline_stage, last = p.num_layers_in_last_pipeline_stage;
  std::vector<int> out(p.pp, 0);
  if (p.pp == 1) {
    if ((first || last) && problems) problems->push_back("num_layers_in_first/last_pipeline_stage need pp > 1");
    out[0] = L;
    return out;
  }
  int middle_stages = p.pp - (first ? 1 : 0) - (last ? 1 : 0);
  int rest = L - first - last;
  if (rest < 0 || (middle_stages == 0 && rest != 0) || (middle_stages > 0 && (rest <= 0 || rest % middle_stages != 0))) {
    if (problems)
      problems->push_back("layers do not split into pp stages: num_layers=" + s(L) + " with first stage " + s(first) +
                          ", last stage " + s(last) + " leaves " + s(rest) + " layers for " + s(middle_stages) +
                          " stages; choose pp (and first/last stage sizes) so the rest divides evenly");
    return {};
  }
  int each = middle_stages > 0 ? rest / middle_stages : 0;
  for (int i = 0; i < p.pp; ++i) out[i] = each;
  if (first) out[0] = first;
  if (last) out[p.pp - 1] = last;
  return out;
}

// Rules of the activation-memory, optimizer and MoE runtime options (Megatron's validate_args and
// TransformerConfig.__post_init__ checks for the options mplan expresses; the framework's support).
void memory_option_rules(const ModelSpec& m, const TrainingSpec& t, const ParallelConfig& p, std::vector<std::string>& e) {
  const FrameworkMemory fw = framework_memory(t.framework);
  const std::string fwn = to_string(t.framework);
  const RecomputeModules rm = p.recompute_modules;
  if (!rm.empty() && p.recompute != Recompute::selective)
    e.push_back("recompute_modules (" + join_names(to_names(rm)) +
                ") need recompute=selective, got recompute=" + to_string(p.recompute));
  if (!rm.empty() && !fw.supports_recompute_modules)
    e.push_back("recompute_modules are Megatron-Core's --recompute-modules; framework " + fwn +
                " has no such option (use recompute=selective or full, or framework=megatron)");
  bool has_shared = m.moe && m.moe->shared_expert_ffn_hidden_size > 0;
  for (auto [mod, ok, need] : {std::tuple{RecomputeModule::moe, bool(m.moe), "a mixture-of-experts model"},
                               std::tuple{RecomputeModule::moe_act, bool(m.moe), "a mixture-of-experts model"},
                               std::tuple{RecomputeModule::shared_experts, has_shared, "a model with shared experts"},
                               std::tuple{RecomputeModule::mla_up_proj, bool(m.mla), "multi-latent attention (MLA)"}})
    if (rm.has(mod) && !ok)
      e.push_back("recompute module '" + to_names(RecomputeModules{uint32_t(mod)}).front() + "' needs " + need + "; '" + m.name +
                  "' has none");
  const OffloadModules om = p.offload_modules;
  if (!om.empty()) {
    if (!fw.supports_activation_offload)
      e.push_back("offload_modules (fine-grained activation offloading) is a Megatron-Core feature; framework " + fwn +
                  " has no such option");
    if (om.has(OffloadModule::attn_proj) && !om.has(OffloadModule::core_attn))
      e.push_back("offload module 'attn_proj' needs 'core_attn' offloaded too, as Megatron requires");
    if ((om.has(OffloadModule::expert_fc1) || om.has(OffloadModule::moe_act)) && !m.moe)
      e.push_back("offload modules 'expert_fc1'/'moe_act' need a mixture-of-experts model; '" + m.name + "' is dense");
    if ((om.has(OffloadModule::expert_fc1) || om.has(OffloadModule::moe_act)) &&
        p.effective_recompute_modules().has(RecomputeModule::moe))
      e.push_back("offload modules 'expert_fc1'/'moe_act' cannot be combined with recompute module 'moe' (Megatron rejects it)");
  }
  if (p.cpu_offload_layers > 0) {
    if (!fw.supports_activation_offload)
      e.push_back("cpu_offload_layers (activation offloading) is a Megatron-Core feature; framework " + fwn +
                  " has no such option");
    if (p.pp > 1)
      e.push_back("cpu_offload_layers needs pp=1 (Megatron: no support for pipeline parallelism with CPU offloading)");
    if (p.recompute != Recompute::none) e.push_back("cpu_offload_layers cannot be combined with recompute (Megatron rejects it)");
    if (p.cpu_offload_layers >= m.num_layers)
      e.push_back("cpu_offload_layers=" + s(p.cpu_offload_layers) + " must be below num_layers=" + s(m.num_layers));
    if (!p.offload_modules.empty())
      e.push_back("give either cpu_offload_layers or offload_modules, not both (Megatron rejects the combination)");
  }
  // Megatron-Core transformer_config.py __post_init__: 'disable full recomputation when enabling
  // overlap_moe_expert_parallel_comm', 'disable moe in recompute_modules when enabling ...'
  if (p.moe_a2a_overlap && (p.recompute == Recompute::full || p.effective_recompute_modules().has(RecomputeModule::moe)))
    e.push_back(
        "moe_a2a_overlap cannot be combined with full recompute or recompute module 'moe' (Megatron's "
        "--overlap-moe-expert-parallel-comm rejects them)");
  if (p.fp8_param_gather && !is_fp8_family(t.precision))
    e.push_back("fp8_param_gather needs an fp8 precision (fp8, mxfp8, nvfp4), got " + std::string(to_string(t.precision)));
  if (p.fp8_param_gather && p.zero < 1)
    e.push_back("fp8_param_gather needs the distributed optimizer or FSDP (zero >= 1), as Megatron requires");
  if (p.fp8_param_gather && !framework_profile(t.framework).supports_fp8_param_gather)
    e.push_back("fp8_param_gather is Megatron's --fp8-param-gather; framework " + fwn + " has no such option");
  if (p.cross_entropy_fusion && !fw.supports_cross_entropy_fusion)
    e.push_back("cross_entropy_fusion: framework " + fwn + " has no fused cross-entropy; set it false");
  if (p.moe_capacity_factor < 0) e.push_back("moe_capacity_factor must be > 0 (omit it for dropless routing)");
  if (p.moe_capacity_factor > 0 && !m.moe)
    e.push_back("moe_capacity_factor needs a mixture-of-experts model; '" + m.name + "' is dense");
  if (p.moe_pad_to_capacity && p.moe_capacity_factor <= 0) e.push_back("moe_pad_to_capacity needs moe_capacity_factor > 0");
  if (p.dp_replicate < 1 || (p.dp() > 0 && p.dp() % p.dp_replicate != 0))
    e.push_back("dp_replicate=" + s(p.dp_replicate) + " must divide dp=" + s(p.dp()));
  if (p.remat_policy != RematPolicy::none && framework_profile(t.framework).remat_style != RematStyle::jax_policy)
    e.push_back("remat_policy is a MaxText/JAX remat policy; framework " + fwn +
                " has none (use recompute and recompute_modules)");
  if (p.remat_policy != RematPolicy::none && p.recompute != Recompute::selective)
    e.push_back("remat_policy needs recompute=selective (recompute=full is MaxText's 'full' policy)");
  if (p.zero >= 0 && p.zero <= 3 && !(fw.zero_levels & (1u << p.zero))) {
    std::string ok;
    for (int z = 0; z <= 3; ++z)
      if (fw.zero_levels & (1u << z)) ok += (ok.empty() ? "" : ", ") + std::to_string(z);
    e.push_back("zero=" + s(p.zero) + " is not an option of framework " + fwn + " (it has zero " + ok + ")");
  }
  if (p.dp_replicate > 1 && p.zero == 0) e.push_back("dp_replicate > 1 needs a sharded optimizer or FSDP (zero >= 1)");
}
}  // namespace

std::vector<std::vector<int>> balanced_pipeline_layout(const ModelSpec& m, int pp, int vpp) {
  std::vector<std::vector<int>> out(pp, std::vector<int>(vpp, 0));
  const int chunks = pp * vpp;
  if (chunks <= 0) return out;
  const int head_units = 1 + 2 * m.mtp_num_layers;
  const int units = m.num_layers + 1 + head_units;
  // every chunk holds floor(units / chunks) units; the remainder goes to the outer chunks first (last,
  // first, second-to-last, ...), as recipes give the first and last stages the uneven share
  // (--decoder-first/last-pipeline-num-layers), so no middle stage is the odd one out
  std::vector<int> u(chunks, units / chunks);
  for (int i = 0, r = units % chunks; i < chunks && r > 0; ++i, --r) u[i % 2 == 0 ? chunks - 1 - i / 2 : i / 2] += 1;
  // model order is chunk-major: (chunk 0: stage 0..pp-1), (chunk 1: ...); the embedding is a unit of
  // chunk 0, the loss and MTP modules are units of the last chunk
  std::vector<int> n(chunks);
  for (int k = 0; k < chunks; ++k) n[k] = u[k] - (k == 0 ? 1 : 0) - (k == chunks - 1 ? head_units : 0);
  // a chunk whose fixed units exceed its share holds no layer; the fullest chunks give up the layers
  // it could not hold, one at a time
  int excess = 0;
  for (int& v : n) {
    if (v < 0) {
      excess -= v;
      v = 0;
    }
  }
  int total = 0;
  for (int v : n) total += v;
  for (; excess > 0 && total > m.num_layers; --excess, --total) {  // sum(n) = layers + excess
    int best = 0;
    for (int k = 1; k < chunks; ++k)
      if (n[k] > n[best]) best = k;
    n[best] -= 1;
  }
  for (int k = 0; k < chunks; ++k) out[k % pp][k / pp] = n[k];
  return out;
}

std::vector<std::vector<int>> layers_per_stage_chunk(const ModelSpec& m, const ParallelConfig& p) {
  if (!p.pipeline_layout.empty()) return p.pipeline_layout;
  std::vector<int> st = stage_layers(m, p, nullptr);
  std::vector<std::vector<int>> out(p.pp, std::vector<int>(p.vpp, 0));
  for (int i = 0; i < p.pp && i < int(st.size()); ++i)
    for (int c = 0; c < p.vpp; ++c) out[i][c] = st[i] / p.vpp;
  return out;
}

int first_layer_of(const ModelSpec& m, const ParallelConfig& p, int stage, int chunk) {
  auto n = layers_per_stage_chunk(m, p);
  int idx = 0;
  for (int c = 0; c < chunk; ++c)
    for (int s2 = 0; s2 < p.pp; ++s2) idx += n[s2][c];
  for (int s2 = 0; s2 < stage; ++s2) idx += n[s2][chunk];
  return idx;
}

std::vector<std::string> validate_layout(const ModelSpec& m, const ClusterSpec& c, const TrainingSpec& t,
                                         const ParallelConfig& p) {
  std::vector<std::string> e;
  for (const ParallelField& f : parallel_fields()) {  // the integer ranges of the descriptor table
    const int v = f.type() == FieldType::integer ? p.*f.access.i : 0;
    if (f.type() == FieldType::integer && (v < f.min || v > f.max))
      e.push_back(std::string(f.json) + "=" + s(v) +
                  (v < 1 && f.min == 1 ? " must be >= 1" : " must be in " + s(int64_t(f.min)) + ".." + s(int64_t(f.max))));
  }
  if (t.global_batch_size < 1) e.push_back("global_batch_size=" + s(t.global_batch_size) + " must be >= 1");
  if (t.seq_length < 1) e.push_back("seq_length=" + s(t.seq_length) + " must be >= 1");
  if (!e.empty()) return e;

  if (p.world_size > c.max_gpus())
    e.push_back("cluster too small: " + s(p.world_size) + " GPUs requested but cluster '" + c.name + "' has " + s(c.num_nodes) +
                " nodes x " + s(c.gpus_per_node) + " = " + s(c.max_gpus()) + " GPUs");
  int mp = p.tp * p.pp * p.cp;
  if (p.world_size % mp != 0) {
    e.push_back("tp*pp*cp=" + s(p.tp) + "*" + s(p.pp) + "*" + s(p.cp) + "=" + s(mp) + " does not divide the " + s(p.world_size) +
                " GPUs; dp = GPUs/(tp*pp*cp) must be a whole number");
    return e;
  }
  int dp = p.dp();
  for (auto [what, v, applies] : {std::tuple{"num_attention_heads", int64_t(m.num_attention_heads), true},
                                  {"num_query_groups", int64_t(m.num_query_groups), !m.mla},
                                  {"ffn_hidden_size", m.ffn_hidden_size, true}})
    if (applies && v % p.tp != 0) e.push_back("tp=" + s(p.tp) + " does not divide " + what + "=" + s(v));
  if (m.mamba) {  // Megatron-Core MambaMixer: heads and B/C groups split over TP, heads over CP too
    const MambaSpec& b = *m.mamba;
    if (b.num_heads % p.tp != 0) e.push_back("tp=" + s(p.tp) + " does not divide mamba.num_heads=" + s(b.num_heads));
    if (b.num_groups % p.tp != 0) e.push_back("tp=" + s(p.tp) + " does not divide mamba.num_groups=" + s(b.num_groups));
    if (p.cp > 1 && (b.num_heads / p.tp) % p.cp != 0)
      e.push_back("cp=" + s(p.cp) + " does not divide the Mamba heads per tensor-parallel rank (" + s(b.num_heads / p.tp) +
                  "); context parallelism shards them");
  }
  if (p.sp && p.tp == 1) e.push_back("sequence parallel needs tp > 1 (sp=true with tp=1); turn sp off");
  if (p.sp && t.seq_length % (int64_t(p.tp) * p.cp) != 0)
    e.push_back("seq_length=" + s(t.seq_length) + " is not divisible by tp*cp=" + s(p.tp * p.cp) +
                " as sequence parallel requires");
  if (p.tp_comm_overlap && !p.sp) e.push_back("tp_comm_overlap needs sequence parallel (sp=true)");
  if (p.cp > 1 && t.seq_length % (2 * int64_t(p.cp)) != 0)
    e.push_back("seq_length=" + s(t.seq_length) + " is not divisible by 2*cp=" + s(2 * p.cp) +
                " (load-balanced context parallel splits the sequence into 2*cp chunks)");
  // expert parallelism
  if (!m.moe) {
    if (p.ep > 1) e.push_back("ep=" + s(p.ep) + " needs a mixture-of-experts model; '" + m.name + "' is dense");
    if (p.etp > 1) e.push_back("etp=" + s(p.etp) + " needs a mixture-of-experts model; '" + m.name + "' is dense");
  } else {
    if (m.moe->num_experts % p.ep != 0) e.push_back("ep=" + s(p.ep) + " does not divide num_experts=" + s(m.moe->num_experts));
    if ((int64_t(p.tp) * p.cp * dp) % (int64_t(p.ep) * p.etp) != 0)
      e.push_back("ep*etp=" + s(p.ep * p.etp) + " does not divide tp*cp*dp=" + s(p.tp * p.cp * dp) +
                  " (the expert layout etp-ep-edp must tile the same GPUs as tp-cp-dp)");
    if (p.tp > 1 && !p.sp)
      e.push_back("a mixture-of-experts model with tp=" + s(p.tp) +
                  " needs sequence parallel (sp=true), as Megatron-LM requires");
    if (m.moe->moe_ffn_hidden_size % p.etp != 0)
      e.push_back("etp=" + s(p.etp) + " does not divide moe_ffn_hidden_size=" + s(m.moe->moe_ffn_hidden_size));
    // Megatron-Core megatron/core/transformer/transformer_config.py __post_init__:
    //   assert self.expert_tensor_parallel_size == 1, "Bias in Moe is only supported when ETP==1"
    if (m.add_bias_linear && p.etp > 1)
      e.push_back("etp=" + s(p.etp) + ": '" + m.name +
                  "' has linear biases, and Megatron-LM supports biases in MoE layers only with "
                  "etp=1 (\"Bias in Moe is only supported when ETP==1\"); use etp=1");
    // transformer_config.py __post_init__, `if self.overlap_moe_expert_parallel_comm:` block
    if (p.moe_a2a_overlap && m.mtp_num_layers > 1)
      e.push_back(
          "moe_a2a_overlap supports at most one MTP layer (Megatron: 'MTP supports at most one layer when enabling "
          "overlap_moe_expert_parallel_comm'); the model has " +
          s(m.mtp_num_layers));
    if (p.moe_a2a_overlap && (t.precision == Precision::fp32 || t.precision == Precision::tf32))
      e.push_back(
          "moe_a2a_overlap needs a bf16 or fp16 model (Megatron: 'overlap_moe_expert_parallel_comm is only supported with "
          "bf16 or fp16 model'); got precision " +
          std::string(to_string(t.precision)));
    // transformer_config.py: 'overlap_moe_expert_parallel_comm is only supported with expert model parallelism'
    if (p.moe_a2a_overlap && p.ep == 1)
      e.push_back("moe_a2a_overlap needs expert parallelism (ep > 1): with ep=1 there is no all-to-all");
    // transformer_config.py: 'If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be
    // specified when pipeline_model_parallel_size > 1'
    if (p.moe_a2a_overlap && p.pp > 1 && p.vpp == 1)
      e.push_back("moe_a2a_overlap needs pp=1 or interleaving (vpp > 1), as Megatron's combined 1F1B schedule requires; got pp=" +
                  s(p.pp) + ", vpp=1");
  }
  if (!m.moe && (p.moe_a2a_overlap || p.moe_force_balance || p.moe_dispatcher != MoeDispatcher::alltoall))
    e.push_back("moe_dispatcher, moe_force_balance and moe_a2a_overlap need a mixture-of-experts model; '" + m.name +
                "' is dense");
  // pipeline
  std::vector<int> st;
  if (!p.pipeline_layout.empty()) {
    bool shape = int(p.pipeline_layout.size()) == p.pp;
    int total = 0;
    for (const auto& row : p.pipeline_layout) {
      shape = shape && int(row.size()) == p.vpp;
      int stage_total = 0;
      for (int v : row) stage_total += v;
      total += stage_total;
      st.push_back(stage_total);
    }
    if (!shape)
      e.push_back("pipeline_layout must have pp=" + s(p.pp) + " rows of vpp=" + s(p.vpp) + " chunk sizes");
    else if (total != m.num_layers)
      e.push_back("pipeline_layout places " + s(total) + " layers but the model has num_layers=" + s(m.num_layers));
    if (p.num_layers_in_first_pipeline_stage || p.num_layers_in_last_pipeline_stage)
      e.push_back("give either pipeline_layout or num_layers_in_first/last_pipeline_stage, not both");
    if (!shape || total != m.num_layers) st.clear();
  } else {
    std::vector<std::string> split;
    st = stage_layers(m, p, &split);
    e.insert(e.end(), split.begin(), split.end());
    if (!st.empty()) {
      for (int i = 0; i < p.pp; ++i) {
        if (st[i] % p.vpp != 0) {
          e.push_back("layers do not split into pp*vpp chunks: stage " + s(i) + " has " + s(st[i]) +
                      " layers, not divisible by vpp=" + s(p.vpp) + " (a pipeline_layout can place them unevenly)");
          break;
        }
        if (st[i] < p.vpp) {
          e.push_back("stage " + s(i) + " has " + s(st[i]) + " layers, fewer than vpp=" + s(p.vpp));
          break;
        }
      }
    }
  }
  if (p.vpp > 1 && p.pp == 1) e.push_back("vpp=" + s(p.vpp) + " needs pp > 1");
  if (p.vpp > 1 && p.schedule != Schedule::interleaved)
    e.push_back("vpp=" + s(p.vpp) + " needs the interleaved schedule, not " + to_string(p.schedule));
  if (p.vpp == 1 && p.schedule == Schedule::interleaved) e.push_back("the interleaved schedule needs vpp > 1");
  // batch
  int64_t per_step = int64_t(p.micro_batch_size) * dp;
  if (t.global_batch_size % per_step != 0)
    e.push_back("gbs=" + s(t.global_batch_size) + " is not a multiple of mbs*dp=" + s(p.micro_batch_size) + "*" + s(dp) + "=" +
                s(per_step));
  else if (p.schedule == Schedule::interleaved && (t.global_batch_size / per_step) % p.pp != 0)
    e.push_back("the interleaved schedule needs the number of micro-batches (" + s(t.global_batch_size / per_step) +
                ") to be a multiple of pp=" + s(p.pp));
  // memory/optimizer
  if (p.recompute != Recompute::full && p.recompute_num_layers > 0) e.push_back("recompute_num_layers needs recompute=full");
  if (!st.empty() && p.recompute_num_layers > 0) {
    int min_chunk = INT32_MAX;
    for (const auto& row : layers_per_stage_chunk(m, p))
      for (int v : row) min_chunk = std::min(min_chunk, v);
    if (p.recompute_num_layers > min_chunk)
      e.push_back("recompute_num_layers=" + s(p.recompute_num_layers) + " exceeds the " + s(min_chunk) +
                  " layers of the smallest pipeline chunk");
  }
  memory_option_rules(m, t, p, e);
  if (framework_profile(t.framework).megatron_core_rules) megatron_layout_rules(m, t, p, e);
  if (!c.gpu.peak(t.precision))
    e.push_back("precision " + std::string(to_string(t.precision)) + " is not supported by " + c.gpu.name +
                " (cluster.gpu.peak_tflops has no entry for it)");
  return e;
}

}  // namespace mplan
