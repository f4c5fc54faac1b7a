// Megatron-LM command-line arguments for a plan (names and constraints as in Megatron-LM's
// megatron/training/arguments.py), and the reverse parse used by round-trip tests.
// Constraints kept: --sequence-parallel only with tp > 1 (Megatron turns it off at tp 1), and
// --tp-comm-overlap only with it; one of --num-layers-per-virtual-pipeline-stage,
// --num-virtual-stages-per-pipeline-rank, --pipeline-model-parallel-layout; the first/last-stage
// options only with --num-virtual-stages-per-pipeline-rank for interleaving; --overlap-param-gather
// only with --overlap-grad-reduce and the distributed optimizer or Megatron FSDP; a pipeline layout
// that Megatron's --account-for-embedding/loss-in-pipeline-split produce is written as those flags;
// --recompute-method never with selective recomputation; --moe-grouped-gemm except in fp32, and fp8's
// tensorwise recipe where the default delayed one rejects the recompute modules
// (core/megatron_rules.h).
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/json_fields.h"
#include "core/megatron_rules.h"
#include "core/model_fields.h"
#include "core/parallel_fields.h"
#include "core/training_fields.h"
#include "planner/planner.h"

namespace mplan {

namespace {

// the shortest decimal that reads back as the same double (so the import round-trips exactly)
std::string num(double v) { return shortest_decimal(v); }

// The layers per [stage][chunk] that Megatron-LM builds with --account-for-embedding-in-pipeline-split
// (embedding) and --account-for-loss-in-pipeline-split (loss): num_layers plus one per flag, split
// evenly over pp*vpp chunks, then one layer fewer on the first chunk (embedding) and the last (loss).
// Empty when Megatron would reject it (the total does not divide, or a chunk would be empty).
std::vector<std::vector<int>> account_split(int num_layers, int pp, int vpp, bool embedding, bool loss) {
  int total = num_layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  if (pp < 1 || vpp < 1 || total % (pp * vpp) != 0) return {};
  int each = total / (pp * vpp);
  std::vector<std::vector<int>> n(size_t(pp), std::vector<int>(size_t(vpp), each));
  if (embedding) --n[0][0];
  if (loss) --n[size_t(pp - 1)][size_t(vpp - 1)];
  if (n[0][0] < 1 || n[size_t(pp - 1)][size_t(vpp - 1)] < 1) return {};
  return n;
}

// RoPE: --rotary-base (an int in Megatron), --rotary-percent, and the scaling: llama3 as
// --use-rope-scaling --rope-scaling-factor (Megatron fixes low/high frequency factors 1/4 and the 8192
// original context); YaRN as --position-embedding-type yarn (written by the caller) with
// --rotary-scaling-factor and the --yarn-* options, or with MLA as --rope-type yarn, whose
// original_max_position_embeddings / beta_fast / beta_slow are MLATransformerConfig fields without a flag.
template <class Arg, class Put>
void rope_args(const ModelSpec& m, Arg&& arg, Put&& put, std::vector<std::string>& notes) {
  char base[32];
  std::snprintf(base, sizeof base, "%.0f", m.rotary_base);
  arg("--rotary-base", base);
  put("rotary_percent");
  if (std::fabs(m.rotary_base - std::round(m.rotary_base)) > 1e-9)
    notes.push_back("rotary base " + num(m.rotary_base) + " is not an integer; Megatron's --rotary-base takes an int");
  const RopeScaling& r = m.rope_scaling;
  if (m.mla) arg("--rope-type", r.type == RopeScalingType::yarn ? "yarn" : "rope");
  if (r.type == RopeScalingType::llama3) {
    arg("--use-rope-scaling");
    arg("--rope-scaling-factor", num(r.factor));
    if (r.low_freq_factor != 1.0 || r.high_freq_factor != 4.0 || r.original_max_position_embeddings != 8192)
      notes.push_back(
          "Megatron's llama3 RoPE scaling fixes low_freq_factor 1, high_freq_factor 4 and an 8192-token original "
          "context; the model's differ");
  } else if (r.type == RopeScalingType::yarn) {
    arg("--rotary-scaling-factor", num(r.factor));
    for (const char* f : {"mscale", "mscale_all_dim"}) put(std::string("rope_scaling.") + f);
    if (!m.mla) {
      for (const char* f : {"original_max_position_embeddings", "beta_fast", "beta_slow"}) put(std::string("rope_scaling.") + f);
    } else if (r.original_max_position_embeddings != 4096 || r.beta_fast != 32 || r.beta_slow != 1) {
      notes.push_back("YaRN with MLA: set MLATransformerConfig original_max_position_embeddings=" +
                      std::to_string(r.original_max_position_embeddings) + ", beta_fast=" + num(r.beta_fast) +
                      ", beta_slow=" + num(r.beta_slow) + " (no command-line flag; Megatron's defaults are 4096, 32, 1)");
    }
  }
}

// CUDA_DEVICE_MAX_CONNECTIONS as the layout needs it ("" for none; see environment_lines).
std::string connections_line(const Plan& plan) {
  const ParallelConfig& p = plan.parallel;
  const std::string& arch = plan.cluster.gpu.arch;
  bool blackwell = arch == "blackwell" || arch == "rubin";
  bool fsdp = p.zero >= 2;
  if (fsdp) return "unset CUDA_DEVICE_MAX_CONNECTIONS  # Megatron-FSDP asserts it is not 1 (arguments.py validate_args)";
  if (p.tp == 1 && p.cp == 1) return "";
  if (blackwell) return "unset CUDA_DEVICE_MAX_CONNECTIONS  # not needed from Blackwell on (arguments.py validate_args)";
  if (p.moe_a2a_overlap)
    return "export CUDA_DEVICE_MAX_CONNECTIONS=32  # EP all-to-all overlap wants several connections; Megatron only warns "
           "with tp/cp > 1 (arguments.py validate_args)";
  return "export CUDA_DEVICE_MAX_CONNECTIONS=1  # tp/cp > 1 before Blackwell: Megatron asserts it (arguments.py validate_args)";
}

// The environment Megatron-LM's validate_args checks (megatron/training/arguments.py): with tp > 1 or
// cp > 1 before Blackwell (compute capability < 10) it asserts CUDA_DEVICE_MAX_CONNECTIONS=1, except
// with Megatron-FSDP (which asserts it is not 1) or the EP all-to-all overlap (a warning; it wants more
// connections). Fine-grained activation offloading with Transformer Engine >= 2.10 asserts
// NVTE_CPU_OFFLOAD_V1=1. Returns the shell lines and the reason.
std::vector<std::string> environment_lines(const Plan& plan) {
  const ParallelConfig& p = plan.parallel;
  std::vector<std::string> out;
  if (!p.offload_modules.empty())
    out.push_back(
        "export NVTE_CPU_OFFLOAD_V1=1  # fine-grained activation offloading with TE >= 2.10: Megatron asserts it "
        "(arguments.py validate_args)");
  out.push_back(connections_line(plan));
  if (out.back().empty()) out.pop_back();
  return out;
}

// The field whose value one Megatron-LM flag carries (MegatronMap::direct), or nullptr.
const ParallelField* megatron_field(const std::string& flag) {
  for (const ParallelField& f : parallel_fields())
    if (f.map == MegatronMap::direct && flag == f.megatron) return &f;
  return nullptr;
}

}  // namespace

std::string export_megatron_args(const Plan& plan) {
  const ModelSpec& m = plan.model;
  const ParallelConfig& p = plan.parallel;
  const TrainingSpec& t = plan.training;
  std::vector<std::string> notes, a;
  auto arg = [&](const std::string& name, const std::string& value = "") {
    a.push_back(value.empty() ? name : name + " " + value);
  };
  auto iarg = [&](const std::string& name, int64_t v) { arg(name, std::to_string(v)); };
  auto put = [&](const std::string& field) {  // a field's own flag (core/model_fields.h, core/parallel_fields.h)
    const ModelField* mf = model_field(field);
    std::string s = mf ? megatron_model_arg(*mf, m) : megatron_arg(*parallel_field(field), p);
    if (!s.empty()) a.push_back(s);
  };
  auto put_training = [&](const char* flag) {  // a training field's flag (core/training_fields.h)
    arg(flag, training_field_text(*training_field_of_flag(flag), t));
  };
  // model
  for (const char* f : {"num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads"}) put(f);
  if (!m.mla) {
    if (m.num_query_groups != m.num_attention_heads) {
      arg("--group-query-attention");
      put("num_query_groups");
    }
    if (m.kv_channels != m.hidden_size / m.num_attention_heads) put("kv_channels");
  }
  put_training("--seq-length");
  iarg("--max-position-embeddings", std::max<int64_t>(t.seq_length, m.max_position_embeddings));
  put("vocab_size");
  if (m.activation == Activation::swiglu) arg("--swiglu");
  if (m.activation == Activation::squared_relu) arg("--squared-relu");
  arg("--normalization", m.norm == NormKind::rmsnorm ? "RMSNorm" : "LayerNorm");
  bool yarn = m.rope_scaling.type == RopeScalingType::yarn;
  arg("--position-embedding-type", m.position_embedding == PositionEmbedding::learned ? "learned_absolute"
                                   : m.position_embedding == PositionEmbedding::none  ? "none"
                                   : yarn && !m.mla                                   ? "yarn"
                                                                                      : "rope");
  if (m.position_embedding == PositionEmbedding::rope) rope_args(m, arg, put, notes);
  for (const char* f : {"norm_epsilon", "softmax_type"}) put(f);
  if (m.window_size > 0) {
    arg("--window-size", megatron_window_size(m.window_size));
    put("window_attn_skip_freq");
  }
  if (!m.tied_embeddings) arg("--untie-embeddings-and-output-weights");
  if (!m.add_bias_linear) arg("--disable-bias-linear");
  if (m.add_qkv_bias && !m.add_bias_linear) arg("--add-qkv-bias");
  for (const char* f : {"qk_layernorm", "attention_dropout", "hidden_dropout"}) put(f);
  if (m.mla) {
    arg("--multi-latent-attention");
    for (const char* f : {"q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_rope_head_dim", "v_head_dim"})
      put(std::string("mla.") + f);
  }
  put("mtp_num_layers");
  if (m.is_hybrid()) {
    // the hybrid stack (megatron/core/models/hybrid): one symbol per layer, then one "/" pattern per MTP
    // depth (mplan's MTP depth: attention and the model's MoE or MLP)
    std::string pattern = m.hybrid_override_pattern;
    for (int i = 0; i < m.mtp_num_layers; ++i) pattern += m.moe ? "/*E" : "/*-";
    arg("--hybrid-override-pattern", "\"" + pattern + "\"");
    for (const char* f : {"num_heads", "head_dim", "state_dim", "num_groups"}) put(std::string("mamba.") + f);
    notes.push_back("a hybrid model trains with Megatron-LM's pretrain_mamba.py (the hybrid stack), not pretrain_gpt.py");
  }
  if (m.moe) {
    for (const char* f : {"num_experts", "top_k", "moe_ffn_hidden_size", "shared_expert_ffn_hidden_size", "moe_latent_size"})
      put(std::string("moe.") + f);
    if (m.moe->first_k_dense_layers > 0 || m.moe->moe_layer_freq != 1)
      arg("--moe-layer-freq", "\"" + megatron_moe_layer_freq(m) + "\"");
    if (p.moe_dispatcher == MoeDispatcher::alltoall) {
      arg("--moe-token-dispatcher-type", "alltoall");
    } else {
      arg("--moe-token-dispatcher-type", "flex");
      arg("--moe-flex-dispatcher-backend", to_string(p.moe_dispatcher));
    }
    for (const char* f : {"router_score_function", "router_enable_expert_bias", "router_num_groups", "router_group_topk",
                          "router_topk_scaling_factor"})
      put(std::string("moe.") + f);
    put("moe_force_balance");
    if (p.moe_a2a_overlap) {
      put("moe_a2a_overlap");
      arg("--delay-wgrad-compute");
    }
    if (megatron_moe_grouped_gemm(t.precision)) arg("--moe-grouped-gemm");
  }
  // parallel layout
  put("tp");
  bool sp = p.sp && p.tp > 1;
  if (sp) put("sp");
  if (sp) put("tp_comm_overlap");
  put("pp");
  bool account_emb = false, account_loss = false;  // the layout is what Megatron's flags build
  if (!p.pipeline_layout.empty() && m.mtp_num_layers == 0 && p.pp > 1)
    for (auto [e, l] : {std::pair{true, true}, {false, true}, {true, false}})
      if (!account_emb && !account_loss && account_split(m.num_layers, p.pp, p.vpp, e, l) == p.pipeline_layout)
        account_emb = e, account_loss = l;
  if (account_emb || account_loss) {
    if (account_emb) arg("--account-for-embedding-in-pipeline-split");
    if (account_loss) arg("--account-for-loss-in-pipeline-split");
    if (p.vpp > 1) iarg("--num-virtual-stages-per-pipeline-rank", p.vpp);
  } else if (!p.pipeline_layout.empty()) {
    arg("--pipeline-model-parallel-layout", "\"" + megatron_pipeline_layout(p.pipeline_layout, m.mtp_num_layers) + "\"");
  } else if (p.num_layers_in_first_pipeline_stage || p.num_layers_in_last_pipeline_stage) {
    if (p.num_layers_in_first_pipeline_stage) put("num_layers_in_first_pipeline_stage");
    if (p.num_layers_in_last_pipeline_stage) put("num_layers_in_last_pipeline_stage");
    if (p.vpp > 1) iarg("--num-virtual-stages-per-pipeline-rank", p.vpp);
  } else if (p.vpp > 1) {
    iarg("--num-layers-per-virtual-pipeline-stage", megatron_layers_per_virtual_stage(m.num_layers, p.pp, p.vpp));
  }
  for (const char* f : {"cp", "cp_comm_type"})
    if (p.cp > 1) put(f);
  for (const char* f : {"ep", "etp"})
    if (m.moe) put(f);
  // batch
  put("micro_batch_size");
  put_training("--global-batch-size");
  // data parallelism and ZeRO
  if (p.zero == 1) arg("--use-distributed-optimizer");
  if (p.zero >= 2) {
    arg("--use-megatron-fsdp");
    arg("--data-parallel-sharding-strategy", megatron_fsdp_strategy(p.zero));
    arg("--use-distributed-optimizer");
    arg("--no-gradient-accumulation-fusion");
    arg("--ckpt-format", "fsdp_dtensor");
  }
  put("overlap_grad_reduce");
  if (p.overlap_grad_reduce && p.zero >= 1) put("overlap_param_gather");
  // recomputation
  if (p.recompute == Recompute::selective) arg("--recompute-granularity", "selective");
  if (p.recompute == Recompute::selective && !p.recompute_modules.empty()) put("recompute_modules");
  if (!p.offload_modules.empty()) {
    arg("--fine-grained-activation-offloading");
    put("offload_modules");
  }
  if (p.cpu_offload_layers > 0) put("cpu_offload_layers");
  if (p.recompute == Recompute::full) {
    arg("--recompute-granularity", "full");
    if (p.recompute_num_layers > 0) {
      arg("--recompute-method", "block");
      iarg("--recompute-num-layers", p.recompute_num_layers);
    } else {
      arg("--recompute-method", "uniform");
      iarg("--recompute-num-layers", 1);
    }
  }
  for (const std::string& flag : megatron_precision_args(t.precision, p)) a.push_back(flag);
  put("fp8_param_gather");
  put("grad_reduce_in_bf16");
  if (p.main_params != MainParams::fp32 || p.adam_states_bf16) {
    arg("--use-precision-aware-optimizer");  // TE FusedAdam; store_param_remainders is its default
    if (p.main_params == MainParams::bf16) arg("--main-params-dtype", "fp16");
    if (p.adam_states_bf16) {
      arg("--exp-avg-dtype", "bf16");
      arg("--exp-avg-sq-dtype", "bf16");
    }
    if (p.main_params == MainParams::none)
      notes.push_back(
          "optimizer without master weights (main_params none) is not a Megatron-LM option: "
          "the precision-aware optimizer keeps 16-bit remainders instead");
  }
  if (p.dp_replicate > 1) put("dp_replicate");
  if (p.cuda_graph_impl != CudaGraphImpl::none) put("cuda_graph_impl");
  if (m.moe && p.moe_capacity_factor > 0) {
    put("moe_capacity_factor");
    put("moe_pad_to_capacity");
  }
  if (p.cross_entropy_fusion) {
    put("cross_entropy_fusion");
    notes.push_back(
        "the plan was costed with a cross-entropy that writes its gradient into the bf16 logits "
        "(Transformer Engine's, as Megatron-Bridge recipes run it); Megatron-LM rejects "
        "--cross-entropy-fusion-impl te, so this runs the native fused loss, which keeps an fp32 softmax");
  }
  if (p.attention_backend == AttentionBackend::unfused) arg("--attention-backend", "unfused");
  if (p.attention_backend == AttentionBackend::triton)
    notes.push_back(
        "the plan was costed with the Triton FlashAttention kernel (llm-foundry); Megatron-LM uses its fused attention");
  // what Megatron-LM cannot express
  if (p.schedule == Schedule::zero_bubble)
    notes.push_back("the zero-bubble schedule (ZB-H1) mplan ranked is not a Megatron-LM option: these arguments run 1F1B");
  if (p.schedule == Schedule::gpipe) notes.push_back("GPipe is not a Megatron-LM schedule: these arguments run 1F1B");
  if (p.tp_comm_overlap && !sp) notes.push_back("TP-comm overlap dropped: it needs sequence parallelism, which needs tp > 1");
  if (plan.training.method == TrainingMethod::lora) notes.push_back("LoRA adapters are not part of these arguments");

  std::ostringstream out;
  out << "# Megatron-LM arguments for " << m.name << " on " << p.world_size << " x " << plan.cluster.gpu.name << " ("
      << plan.cluster.name << "), written by mplan export\n";
  out << "# run with WORLD_SIZE=" << p.world_size << " (data-parallel size " << p.dp() << " = GPUs / (tp*pp*cp))\n";
  for (const auto& n : notes) out << "# note: " << n << "\n";
  for (const auto& e : environment_lines(plan)) out << e << "\n";
  for (size_t i = 0; i < a.size(); ++i) out << a[i] << (i + 1 < a.size() ? " \\\n" : "\n");
  return out.str();
}

std::string megatron_arg_value(const std::vector<std::string>& tok, size_t& i, std::vector<std::string>& problems) {
  if (i + 1 >= tok.size()) {
    problems.push_back(tok[i] + " needs a value");
    return "0";
  }
  return tok[++i];
}

long long megatron_arg_int(const std::vector<std::string>& tok, size_t& i, std::vector<std::string>& problems, long long max) {
  const std::string& k = tok[i];
  int64_t x = 0;
  std::string bad = integer_from_text(megatron_arg_value(tok, i, problems), 0, max, x);
  if (!bad.empty()) problems.push_back(k + ": " + bad);
  return x;
}

Expected<std::vector<std::string>> megatron_tokens(const std::string& text) {
  // tokens: whitespace-separated, "double quotes" kept together, '\' line continuations and # comments
  // dropped; shell lines of the environment (export/unset NAME...) are skipped
  std::vector<std::string> tok;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("export ", 0) == 0 || line.rfind("unset ", 0) == 0) continue;
    size_t i = 0;
    while (i < line.size()) {
      if (line[i] == '#') break;
      if (std::isspace(static_cast<unsigned char>(line[i])) || line[i] == '\\') {
        ++i;
        continue;
      }
      std::string w;
      if (line[i] == '"') {
        size_t j = line.find('"', i + 1);
        if (j == std::string::npos) return Error("unterminated quote in: " + line);
        w = line.substr(i + 1, j - i - 1);
        i = j + 1;
      } else {
        while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) w += line[i++];
      }
      tok.push_back(w);
    }
  }
  return tok;
}

Expected<MegatronLayout> parse_megatron_args(const std::string& text) {
  auto tokens = megatron_tokens(text);
  if (!tokens.ok()) return tokens.error();
  const std::vector<std::string>& tok = *tokens;
  MegatronLayout r;
  ParallelConfig& p = r.parallel;
  p.zero = 0;
  p.overlap_grad_reduce = false;
  p.overlap_param_gather = false;
  std::string layout, sharding;
  int nlpvs = 0;
  bool account_emb = false, account_loss = false;
  bool fsdp = false, dist_opt = false;
  std::string fp8, fp8_recipe, fp4, main_dtype;
  bool bf16 = false, fp16 = false, precision_aware = false;
  std::vector<std::string> problems;
  TrainingSpec training;
  // the flags read as they are, resolved into fields after the loop: switches and texts
  const std::map<std::string, bool*> switches = {{"--account-for-embedding-in-pipeline-split", &account_emb},
                                                 {"--account-for-loss-in-pipeline-split", &account_loss},
                                                 {"--use-distributed-optimizer", &dist_opt},
                                                 {"--use-megatron-fsdp", &fsdp},
                                                 {"--bf16", &bf16},
                                                 {"--fp16", &fp16},
                                                 {"--use-precision-aware-optimizer", &precision_aware}};
  const std::map<std::string, std::string*> texts = {{"--pipeline-model-parallel-layout", &layout},
                                                     {"--data-parallel-sharding-strategy", &sharding},
                                                     {"--fp8-format", &fp8},
                                                     {"--fp8-recipe", &fp8_recipe},
                                                     {"--fp4-format", &fp4},
                                                     {"--main-params-dtype", &main_dtype}};
  for (size_t i = 0; i < tok.size(); ++i) {
    const std::string& k = tok[i];
    auto val = [&] { return megatron_arg_value(tok, i, problems); };
    auto ival = [&] { return megatron_arg_int(tok, i, problems, 1ll << 30); };
    if (auto s = switches.find(k); s != switches.end())
      *s->second = true;
    else if (auto t = texts.find(k); t != texts.end())
      *t->second = val();
    else if (const ParallelField* f = megatron_field(k)) {  // one flag with the member's value
      std::string v;
      if (f->type() == FieldType::boolean)
        v = "true";
      else if (f->type() == FieldType::modules)  // a list of names up to the next option
        while (i + 1 < tok.size() && tok[i + 1].rfind("--", 0) != 0) v += (v.empty() ? "" : ",") + tok[++i];
      else
        v = val();
      std::string bad = set_field_text(*f, p, v);
      if (!bad.empty()) problems.push_back(k + ": " + bad);
    } else if (k == "--num-layers-per-virtual-pipeline-stage")
      nlpvs = int(ival());
    else if (k == "--num-virtual-stages-per-pipeline-rank")
      p.vpp = int(ival());
    else if (const TrainingField* tf = training_field_of_flag(k)) {
      if (std::string bad = set_training_field_text(*tf, training, val()); !bad.empty()) problems.push_back(k + ": " + bad);
    } else if (k == "--num-layers")
      r.num_layers = int(ival());
    else if (k == "--recompute-granularity")
      p.recompute = parse_enum<Recompute>(val()).value_or(Recompute::none);
    else if (k == "--recompute-method") {
      std::string mth = val();
      if (mth == "uniform") p.recompute_num_layers = -1;  // resolved below
    } else if (k == "--recompute-num-layers") {
      int v = int(ival());
      if (p.recompute_num_layers != -1) p.recompute_num_layers = v;
    } else if (k == "--attention-backend")
      p.attention_backend = val() == "unfused" ? AttentionBackend::unfused : AttentionBackend::flash;
    else if (k == "--moe-flex-dispatcher-backend") {
      std::string b = val();
      if (auto d = parse_enum<MoeDispatcher>(b); d && *d != MoeDispatcher::alltoall)
        p.moe_dispatcher = *d;
      else
        problems.push_back("--moe-flex-dispatcher-backend: '" + b + "' is not deepep or hybridep");
    } else if (k == "--moe-enable-deepep")
      p.moe_dispatcher = MoeDispatcher::deepep;
    else if (k == "--exp-avg-dtype")
      p.adam_states_bf16 = val() == "bf16";
    else if (k.rfind("--", 0) == 0 && i + 1 < tok.size() && tok[i + 1].rfind("--", 0) != 0)
      ++i;  // other option's value
  }
  if (!problems.empty()) return Error(problems);
  r.global_batch_size = training.global_batch_size;
  r.seq_length = training.seq_length;
  if (p.recompute_num_layers == -1) p.recompute_num_layers = 0;
  if (!p.sp) p.tp_comm_overlap = false;
  if (!layout.empty()) {
    p.pipeline_layout = parse_megatron_pipeline_layout(layout, p.pp, 0);
    if (p.pipeline_layout.empty())
      return Error("--pipeline-model-parallel-layout: '" + layout +
                   "' is not a layout of a multiple of pp=" + std::to_string(p.pp) + " stages (E, t, m, L, '|', x*N)");
    p.vpp = int(p.pipeline_layout[0].size());
  } else if (account_emb || account_loss) {
    p.pipeline_layout = account_split(r.num_layers, p.pp, p.vpp, account_emb, account_loss);
    if (p.pipeline_layout.empty())
      return Error("--account-for-embedding/loss-in-pipeline-split: " + std::to_string(r.num_layers) +
                   " layers (+1 per flag) do not split into pp*vpp=" + std::to_string(p.pp * p.vpp) + " equal chunks");
  } else if (nlpvs > 0 && r.num_layers > 0) {
    p.vpp = megatron_vpp_of(r.num_layers, p.pp, nlpvs);
  }
  if (precision_aware) p.main_params = main_dtype == "fp16" ? MainParams::bf16 : MainParams::remainder;
  p.schedule = p.vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  if (fsdp && !sharding.empty() && !megatron_fsdp_zero(sharding))
    return Error("--data-parallel-sharding-strategy: '" + sharding +
                 "' is not one of no_shard, optim, optim_grads, optim_grads_params");
  p.zero = fsdp ? megatron_fsdp_zero(sharding).value_or(0) : dist_opt ? 1 : 0;  // Megatron's default: no_shard
  r.precision = megatron_precision(bf16, fp16, !fp8.empty() || fp8_recipe == "mxfp8", fp8_recipe, !fp4.empty());
  return r;
}

}  // namespace mplan
