// Published runs -> plans. Mapping rules (documented in docs/validation.md):
//  - model: a preset when the row names a model mplan ships and states its dimensions (the row's vocab
//    overrides the preset's, as sources count logits with their own vocab), else built from the row's
//    dimensions in the style of its family (Llama: SwiGLU, RMSNorm, untied; GPT/MT-NLG: GELU,
//    LayerNorm, biases, learned positions; MPT: GELU, LayerNorm, ALiBi; Nemotron-4: squared ReLU);
//    hybrid Mamba models (Nemotron 3, Nemotron-H) come from their presets (their layer pattern is in no
//    column); Llama 4 Scout and Maverick likewise (chunked attention costed as full attention);
//  - framework: the row's `framework` column (Megatron/NeMo, torchtitan, llm-foundry, MaxText/Paxml);
//  - cluster: the preset of the row's GPU type; layout: the row's tp/sp/pp/vp/cp/ep/etp/mbs, ZeRO from
//    dist_optimizer/fsdp, recompute from its text; layers that do not split evenly over pp*vp chunks
//    get the most even layout;
//  - then the facts of the recipe behind the row (data/run_facts, simulator/run_facts.h): recompute
//    modules, optimizer and gradient dtypes, fused loss, offloading, MoE runtime, TP overlap, pipeline
//    layout, attention kernel. No rule here names a source or a row.
#include "simulator/published.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/bounded_input.h"
#include "core/counting.h"
#include "core/csv.h"
#include "core/framework_profile.h"
#include "core/limits.h"
#include "core/presets.h"
#include "simulator/run_facts.h"

namespace mplan {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
bool has(const std::string& s, const char* needle) { return lower(s).find(needle) != std::string::npos; }

// A model name as the published tables spell it, lower-case without the separators they vary in
// ("Mixtral 8x7B", "Mixtral-8x7B" and "MIXTRAL_8x7B" are one model): spaces, '-' and '_' dropped.
std::string canonical_name(const std::string& s) {
  std::string out;
  for (char c : lower(s))
    if (c != ' ' && c != '-' && c != '_') out += c;
  return out;
}

// preset for a published model name, "" if none (keys compared in canonical form, so one spelling of
// each covers its variants: "llama3-70b" matches "LLAMA3_70B" and "Llama 3 70B")
std::string preset_for(const std::string& name) {
  const std::string n = canonical_name(name);
  auto any = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (n.find(canonical_name(k)) != std::string::npos) return true;
    return false;
  };
  // the GPT models of NVIDIA's Paxml recipes (Paxml's own GPT configs, not Megatron's)
  if (any({"paxml"}) && any({"gpt-5b"})) return "gpt-5b-paxml";
  if (any({"paxml"}) && any({"gpt-175b", "gpt3-175b"})) return "gpt3-175b-paxml";
  if (any({"nemotron-3-nano"})) return "nemotron-3-nano";
  if (any({"nemotron-3-super"})) return "nemotron-3-super";
  if (any({"nemotron-3-ultra"})) return "nemotron-3-ultra";
  if (any({"nemotron-3.5-lightning", "nemotron-3-5-lightning"})) return "nemotron-3.5-lightning";
  if (any({"nemotron-h-56b"})) return "nemotron-h-56b";
  if (any({"nemotron-h-47b"})) return "nemotron-h-47b";
  if (any({"nemotron-h-8b"})) return "nemotron-h-8b";
  if (any({"llama4-scout", "llama-4-scout"})) return "llama4-scout";
  if (any({"llama4-maverick", "llama-4-maverick"})) return "llama4-maverick";
  if (any({"qwen3-235b"})) return "qwen3-235b-a22b";
  if (any({"qwen3-30b"})) return "qwen3-30b-a3b";
  if (any({"llama3.1-405b", "llama3-405b"})) return "llama3.1-405b";
  if (any({"llama3-70b", "llama3.1-70b"})) return "llama3-70b";
  if (any({"llama3-8b", "llama3.1-8b"})) return "llama3-8b";
  if (any({"llama2-7b"})) return "llama2-7b";
  if (any({"llama2-13b"})) return "llama2-13b";
  if (any({"llama2-70b"})) return "llama2-70b";
  if (any({"deepseek-v3"})) return "deepseek-v3";
  if (any({"kimi"})) return "kimi-k2";
  if (any({"gpt-oss-120b"})) return "gpt-oss-120b";
  if (any({"mixtral-8x7b"})) return "mixtral-8x7b";
  if (any({"mixtral-8x22b"})) return "mixtral-8x22b";
  if (any({"nemotron-340b", "nemotron4-340b"})) return "nemotron4-340b";
  if (any({"nemotron-15b", "nemotron4-15b"})) return "nemotron4-15b";
  if (any({"grok-1"})) return "grok-1";
  return "";
}

// The cluster preset of a published GPU type, compared like model names ("H100 SXM5", "H100-80GB" and
// "H100" are one preset); "" when the type names none (a PCIe/NVL card, an A100 without its memory size).
std::string cluster_for(const std::string& gpu) {
  const std::string g = canonical_name(gpu);
  auto starts = [&](const char* p) { return g.rfind(p, 0) == 0; };
  auto mentions = [&](const char* p) { return g.find(p) != std::string::npos; };
  if (mentions("pcie") || (mentions("nvl") && !starts("gb"))) return "";
  if (starts("gb300")) return "gb300-nvl72";
  if (starts("gb200")) return "gb200-nvl72";
  if (starts("b300")) return "dgx-b300";
  if (starts("b200")) return "dgx-b200";
  if (starts("h200")) return "dgx-h200";
  if (starts("h10096gb") || starts("h10095gb")) return "grand-teton-h100";  // Grand Teton's HBM2e H100
  if (starts("h100")) return "dgx-h100";
  if (starts("a100") && mentions("40gb")) return "dgx-a100-40g";
  if (starts("a100") && mentions("80gb")) return "dgx-a100-80g";
  return "";
}

std::optional<Precision> precision_of(const std::string& t) {
  std::string s = lower(t);
  if (s.find("mxfp8") != std::string::npos) return Precision::mxfp8;
  if (s.find("nvfp4") != std::string::npos) return Precision::nvfp4;
  if (s.find("fp8") != std::string::npos) return Precision::fp8;
  if (s.find("bf16") != std::string::npos) return Precision::bf16;
  if (s.find("fp16") != std::string::npos) return Precision::fp16;
  if (s.find("fp32") != std::string::npos) return Precision::fp32;
  return std::nullopt;
}

// A count column of the row (layers, GPUs, batch, ...) that must lie in [1, max] before it is cast to an
// integer; the error names the column (a fuzzed row with seq_len 1e44 once overflowed the cast).
std::optional<std::string> bad_count(const char* column, double v, int64_t max) {
  if (v >= 1 && v <= double(max)) return std::nullopt;
  return std::string(column) + " must be between 1 and " + std::to_string(max) + ", got " + std::to_string(v);
}

Expected<ModelSpec> model_from_dims(const CsvRow& r, std::string& notes) {
  const std::string& name = r.get("model");
  const std::string cn = canonical_name(name);
  if (cn.find("nemotron3") != std::string::npos || cn.find("nemotronh") != std::string::npos)
    return Error("hybrid Mamba-Transformer model without a preset: its layer pattern is not in the row's columns");
  if (cn.find("llama4") != std::string::npos)
    return Error("Llama 4 other than Scout and Maverick: its expert layout and chunked attention are in no column");
  auto L = r.num("layers"), h = r.num("hidden"), a = r.num("heads");
  if (!L || !h || !a)
    return Error("model '" + name +
                 "' is no preset (`mplan models`) and the row does not give its dimensions (layers, hidden, heads)");
  for (auto bad : {bad_count("layers", *L, kMaxLayers), bad_count("hidden", *h, kMaxHidden), bad_count("heads", *a, kMaxHeads)})
    if (bad) return Error(*bad);
  if (auto seq = r.num("seq_len"))  // sets the learned-position table below
    if (auto bad = bad_count("seq_len", *seq, kMaxSeq)) return Error(*bad);
  ModelSpec m;
  m.name = name;
  m.num_layers = int(*L);
  m.hidden_size = int64_t(*h);
  m.num_attention_heads = int(*a);
  m.num_query_groups = int(r.num("kv_heads").value_or(*a));
  m.kv_channels = int(m.hidden_size / m.num_attention_heads);
  m.ffn_hidden_size = int64_t(r.num("ffn_hidden").value_or(4 * *h));
  if (!r.num("ffn_hidden")) notes += "ffn_hidden = 4h assumed; ";
  m.vocab_size = int64_t(r.num("vocab").value_or(51200));
  if (!r.num("vocab")) notes += "vocab 51200 assumed (GPT-2 BPE padded); ";
  m.norm = NormKind::layernorm;
  m.tied_embeddings = true;
  if (has(name, "llama") || has(name, "mistral") || has(name, "mixtral") || has(name, "qwen")) {
    // Llama family: SwiGLU, RMSNorm, RoPE, untied embeddings, no biases; Mistral 7B and Mixtral
    // (arXiv 2310.06825, 2401.04088: the Llama architecture with GQA, Mixtral's experts from the row's
    // MoE columns) and Qwen (Qwen2 report arXiv 2407.10671: SwiGLU, RMSNorm, RoPE; its QKV bias is
    // not counted) are built the same way
    m.activation = Activation::swiglu;
    m.norm = NormKind::rmsnorm;
    m.position_embedding = PositionEmbedding::rope;
    m.tied_embeddings = false;
  } else if (has(name, "mpt")) {
    m.activation = Activation::gelu;
    m.position_embedding = PositionEmbedding::none;  // ALiBi: a bias inside the attention kernel (MPT, arXiv 2108.12409)
  } else if (has(name, "nemotron")) {
    m.activation = Activation::squared_relu;
    m.position_embedding = PositionEmbedding::rope;
    m.tied_embeddings = false;
  } else if (has(name, "gpt") || has(name, "mt-nlg")) {
    m.activation = Activation::gelu;
    m.position_embedding = PositionEmbedding::learned;
    m.max_position_embeddings = int64_t(r.num("seq_len").value_or(2048));
    m.add_bias_linear = m.add_qkv_bias = true;
  } else {
    return Error("no preset for model '" + name + "' and its family is unknown");
  }
  if (auto e = r.num("moe_num_experts"); e && *e > 1) {
    MoeSpec moe;
    moe.num_experts = int(*e);
    moe.top_k = int(r.num("moe_topk").value_or(2));
    moe.moe_ffn_hidden_size = int64_t(r.num("moe_ffn_hidden").value_or(double(m.ffn_hidden_size)));
    m.moe = moe;
    m.activation = Activation::swiglu;
  }
  auto v = validate_model(m);
  if (!v.empty()) return Error(v);
  return m;
}

// The first model dimension the row states differently from a preset ("" when none).
std::string dims_differ(const CsvRow& r, const ModelSpec& m) {
  const std::pair<const char*, double> dims[] = {{"layers", m.num_layers},
                                                 {"hidden", double(m.hidden_size)},
                                                 {"heads", m.num_attention_heads},
                                                 {"kv_heads", m.mla ? 0.0 : m.num_query_groups},
                                                 {"ffn_hidden", m.moe ? 0.0 : double(m.ffn_hidden_size)}};
  for (auto [k, v] : dims) {
    auto x = r.num(k);
    if (x && v > 0 && std::lround(*x) != std::lround(v)) return std::string(k) + " " + r.get(k);
  }
  return "";
}

int int_or(const CsvRow& r, const char* k, int fallback) {
  auto v = r.num(k);
  return v ? int(std::lround(*v)) : fallback;
}

}  // namespace

const std::string& CsvRow::get(const std::string& k) const {
  static const std::string empty;
  auto it = f.find(k);
  return it == f.end() ? empty : it->second;
}

std::optional<double> CsvRow::num(const std::string& k) const {
  const std::string& s = get(k);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return std::nullopt;
  return v;
}

Expected<std::vector<CsvRow>> read_csv_text(const std::string& text, const std::string& path) {
  auto parsed = csv::parse(text, path);
  if (!parsed) return parsed.error();
  const std::vector<csv::Record>& records = *parsed;
  if (records.empty()) return Error(path + ": empty CSV (expected a header row)");
  std::vector<CsvRow> rows;
  const auto& head = records[0].fields;
  for (size_t i = 1; i < records.size(); ++i) {
    const auto& fields = records[i].fields;
    if (fields.size() != head.size())
      return Error(path + ": row " + std::to_string(i + 1) + " (line " + std::to_string(records[i].line) + ") has " +
                   std::to_string(fields.size()) + " fields, the header has " + std::to_string(head.size()));
    CsvRow r;
    for (size_t k = 0; k < head.size(); ++k) r.f[head[k]] = fields[k];
    rows.push_back(std::move(r));
  }
  return rows;
}

Expected<std::vector<CsvRow>> read_csv_file(const std::string& path) {
  std::vector<std::string> problems;
  auto read = read_input_file(path, kMaxTableInputBytes, problems);  // regular file or "-", size-capped
  if (!read) return Error(problems);
  return read_csv_text(*read, path);
}

std::optional<std::string> doubtful_flag(const CsvRow& r) {
  const std::string& flags = r.get("flags");
  for (const char* f : {"secondary_source", "_suspect", "batch_inconsistent", "truncated_source", "parallel_config_not_stated"})
    if (flags.find(f) != std::string::npos) return std::string(f[0] == '_' ? flags : f);
  return std::nullopt;
}

bool known_regression(const CsvRow& r) { return r.get("flags").find("known_regression") != std::string::npos; }

namespace {
constexpr const char* kModelColumns[] = {"layers", "hidden", "ffn_hidden", "heads", "kv_heads", "vocab", "seq_len"};

// The recipe facts a row's plan takes: all of them, or as stated only those that say which run it is
// (the model's dimensions, the framework).
std::vector<RunFact> facts_for(const CsvRow& row, RowSettings settings) {
  std::vector<RunFact> facts = run_facts_for(row);
  if (settings == RowSettings::as_stated)
    std::erase_if(facts, [](const RunFact& f) {
      return f.fact != "framework" &&
             std::none_of(std::begin(kModelColumns), std::end(kModelColumns), [&](const char* c) { return f.fact == c; });
    });
  return facts;
}

// recompute the row leaves blank: its framework release's documented default
void default_recompute(const FrameworkProfile& fwp, Plan& plan, std::string& notes) {
  ParallelConfig& p = plan.parallel;
  switch (fwp.default_recompute) {
    case DefaultRecompute::none:
      return;
    case DefaultRecompute::full:
      p.recompute = Recompute::full;
      break;
    case DefaultRecompute::selective:
      p.recompute = Recompute::selective;
      break;
    case DefaultRecompute::selective_layer:
      if (fwp.layer_checkpoint_every <= 0) return;
      p.recompute = Recompute::full;
      p.recompute_num_layers = std::max(1, plan.model.num_layers / (fwp.layer_checkpoint_every * p.pp * p.vpp));
      break;
  }
  notes +=
      "recompute not stated: " + to_string(plan.training.framework) + "'s default " + to_string(fwp.default_recompute) + "; ";
}
// settings the row's release line applies to every run (core/framework_profile.h ReleaseDefaults); one
// that would break a layout rule is left out
void release_defaults_for(const ReleaseDefaults& d, Plan& plan, bool routing_stated, std::string& notes) {
  ParallelConfig& p = plan.parallel;
  const bool low_precision = plan.training.precision != Precision::fp32;
  auto attempt = [&](const std::string& what, auto&& set) {
    ParallelConfig before = p;
    set(p);
    if (!validate_layout(plan.model, plan.cluster, plan.training, p).empty())
      p = before;
    else
      notes += what + " (release default); ";
  };
  if (d.grad_reduce_in_bf16 && low_precision && !p.grad_reduce_in_bf16)
    attempt(*d.grad_reduce_in_bf16 ? "bf16 gradients" : "fp32 gradients",
            [&](ParallelConfig& q) { q.grad_reduce_in_bf16 = *d.grad_reduce_in_bf16; });
  if (d.fp8_param_gather && *d.fp8_param_gather && is_fp8_family(plan.training.precision) && p.zero >= 1)
    attempt("fp8 parameters", [](ParallelConfig& q) { q.fp8_param_gather = true; });
  if (d.attention_backend)
    attempt(to_string(*d.attention_backend) + " attention",
            [&](ParallelConfig& q) { q.attention_backend = *d.attention_backend; });
  if (d.dropout && *d.dropout > 0) {
    plan.model.hidden_dropout = plan.model.attention_dropout = *d.dropout;
    notes += "dropout " + std::to_string(*d.dropout).substr(0, 4) + " (release default); ";
  }
  if (d.main_params && low_precision)
    attempt("master weights " + to_string(*d.main_params), [&](ParallelConfig& q) { q.main_params = *d.main_params; });
  if (d.moe_force_balance && plan.model.moe && !routing_stated && p.moe_force_balance != *d.moe_force_balance)
    attempt(*d.moe_force_balance ? "forced MoE routing" : "learned MoE routing",
            [&](ParallelConfig& q) { q.moe_force_balance = *d.moe_force_balance; });
}
}  // namespace

std::string unstated_run(const CsvRow& row, RowSettings settings) {
  auto stated = [&](const char* col) {
    if (!row.get(col).empty()) return true;  // a bad value is the builder's to report (and charged)
    for (const RunFact& f : facts_for(row, settings))
      if (f.fact == col) return true;
    return false;
  };
  std::string missing;
  for (const char* col : {"num_gpus", "gbs", "seq_len"})
    if (!stated(col)) missing += (missing.empty() ? "" : ", ") + std::string(col);
  if (!missing.empty()) return "the row does not state " + missing + " (no run to simulate; not scored)";
  return "";
}

bool has_throughput_measurement(const CsvRow& row) {
  for (const char* col : {"tokens_per_sec_per_gpu", "step_time_s", "tflops_per_gpu"})
    if (auto v = row.num(col); v && *v > 0) return true;
  return false;
}

Expected<PublishedRun> published_run_from_row(const CsvRow& row, RowSettings settings) {
  // model dimensions the table left out but its recipe states (data/run_facts) fill the blank columns
  CsvRow r = row;
  const std::vector<RunFact> facts = facts_for(row, settings);
  for (const RunFact& f : facts)
    for (const char* col : kModelColumns)
      if (f.fact == col && r.get(col).empty()) r.f[col] = f.value;
  PublishedRun run;
  run.row_id = r.get("row_id");
  run.source_id = r.get("source_id");
  run.model_name = r.get("model");
  run.gpu_type = r.get("gpu_type");
  run.precision_text = r.get("precision");
  std::string cname = cluster_for(run.gpu_type);
  if (cname.empty()) return Error("GPU type '" + run.gpu_type + "' has no cluster preset");
  Plan& plan = run.plan;
  plan.cluster = *cluster_preset(cname);
  std::string preset = preset_for(run.model_name);
  std::string differs = preset.empty() ? "" : dims_differ(r, *model_preset(preset));
  if (!preset.empty() && !differs.empty()) {
    // a proxy or variant of the named model (fewer layers, other query groups): build it from the row
    auto m = model_from_dims(r, run.notes);
    if (!m) return Error("row's " + differs + " differs from preset " + preset + " and " + m.error().problems.front());
    plan.model = *m;
    run.notes += "dimensions from the row (" + differs + " differs from preset " + preset + "); ";
  } else if (!preset.empty()) {
    plan.model = *model_preset(preset);
    if (auto v = r.num("vocab")) {
      if (auto bad = bad_count("vocab", *v, kMaxVocab)) return Error(*bad);
      plan.model.vocab_size = int64_t(*v);
    }
    if (has(run.model_name, "w/o mtp")) plan.model.mtp_num_layers = 0;
  } else {
    auto m = model_from_dims(r, run.notes);
    if (!m) return m.error();
    plan.model = *m;
  }
  auto prec = precision_of(run.precision_text);
  if (!prec) return Error("precision '" + run.precision_text + "' not understood");
  auto gpus = r.num("num_gpus"), gbs = r.num("gbs"), seq = r.num("seq_len");
  if (!gpus || !gbs || !seq) return Error("num_gpus, gbs or seq_len missing");
  for (auto bad :
       {bad_count("num_gpus", *gpus, kMaxGpus), bad_count("gbs", *gbs, kMaxBatch), bad_count("seq_len", *seq, kMaxSeq)})
    if (bad) return Error(*bad);
  plan.training = {int64_t(*gbs), int64_t(*seq), *prec};
  const std::string& wl = r.get("workload");
  plan.training.method = wl == "lora" ? TrainingMethod::lora : wl == "sft" ? TrainingMethod::sft : TrainingMethod::pretrain;
  std::string fw_text = r.get("framework");
  for (const RunFact& f : facts)
    if (f.fact == "framework" && fw_text.empty()) fw_text = f.value;
  if (auto fw = framework_from_text(fw_text))
    plan.training.framework = *fw;
  else
    run.notes += "framework '" + fw_text + "' unknown, megatron assumed; ";
  const FrameworkProfile& fwp = framework_profile(plan.training.framework);
  ParallelConfig& p = plan.parallel;
  p.world_size = int(*gpus);
  p.tp = int_or(r, "tp", 1);
  p.pp = int_or(r, "pp", 1);
  p.vpp = int_or(r, "vp", 1);
  p.cp = int_or(r, "cp", 1);
  p.ep = int_or(r, "ep", 1);
  p.etp = int_or(r, "etp", 1);
  const std::string& sp = r.get("sp");
  p.sp = sp == "on" || (sp.empty() && p.tp > 1);
  if (plan.model.moe && p.tp > 1) p.sp = true;
  p.cp_comm_type = default_cp_comm(plan.training.framework);  // a recipe fact may name another
  int dp = p.tp * p.pp * p.cp > 0 ? p.world_size / (p.tp * p.pp * p.cp) : 0;
  if (auto mbs = r.num("mbs")) {
    p.micro_batch_size = int(*mbs);
  } else if (auto ga = r.num("grad_accum"); ga && dp > 0) {
    p.micro_batch_size = std::max(1, int(*gbs / (*ga * dp)));
    run.notes += "mbs from gbs/(dp*grad_accum); ";
  } else if (const int per_stage = fwp.default_microbatches_per_stage; per_stage > 0 && p.pp > 1 && dp > 0) {
    // the framework's default micro-batch count (torchtitan: pp, pipelining_utils.py 2024)
    p.micro_batch_size = std::max(1, int(*gbs / (double(dp) * p.pp * per_stage)));
    run.notes += "mbs from " + to_string(plan.training.framework) + "'s default of pp micro-batches; ";
  } else {
    p.micro_batch_size = 1;
    run.notes += "mbs 1 assumed; ";
  }
  if (fwp.default_interleaved_chunks > 1 && p.pp > 1 && r.get("vp").empty() && has(lower(r.get("notes")), "interleaved 1f1b")) {
    // the framework's default stages per rank of its interleaved schedule (torchtitan: 2)
    p.vpp = fwp.default_interleaved_chunks;
    run.notes += "vpp " + std::to_string(p.vpp) + " (" + to_string(plan.training.framework) +
                 "'s default stages per rank for Interleaved1F1B); ";
  }
  std::string rc = lower(r.get("recompute"));
  p.recompute = rc.rfind("full", 0) == 0        ? Recompute::full
                : rc.rfind("selective", 0) == 0 ? Recompute::selective
                                                : Recompute::none;
  if (const int every = fwp.layer_checkpoint_every; p.recompute == Recompute::selective && every > 0 && has(rc, "(layer")) {
    // layer-level selective checkpointing: every n-th block fully checkpointed (torchtitan:
    // selective_ac_option = 2, config_manager.py)
    p.recompute = Recompute::full;
    p.recompute_num_layers = std::max(1, plan.model.num_layers / (every * p.pp * p.vpp));
    run.notes += to_string(plan.training.framework) + " layer-level checkpointing: every " +
                 (every == 2 ? std::string("second") : std::to_string(every) + "th") + " block recomputed; ";
  }
  if (rc.empty()) default_recompute(fwp, plan, run.notes);
  std::string dopt = lower(r.get("dist_optimizer"));
  double fsdp = r.num("fsdp").value_or(0);
  if (dopt.find("full_shard") != std::string::npos)
    p.zero = 3;
  else if (dopt.find("shard_grad_op") != std::string::npos)
    p.zero = 2;
  else if (fsdp > 0 || lower(r.get("fsdp")) == "on")
    p.zero = 3;
  else if (dopt.rfind("no", 0) == 0)
    p.zero = 0;
  else {
    // not stated: Megatron's distributed optimizer where the framework has it, else the framework's
    // own sharding (MaxText/Paxml shard everything: zero 3)
    const FrameworkMemory fm = framework_memory(plan.training.framework);
    p.zero = (fm.zero_levels >> 1) & 1u ? 1 : fm.default_zero;
    if (p.zero != 1)
      run.notes +=
          "sharding not stated: " + to_string(plan.training.framework) + "'s default zero " + std::to_string(p.zero) + "; ";
  }
  p.schedule = p.vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  if (p.zero == 3 && fsdp > 1 && dp > fsdp && dp % int(fsdp) == 0) {
    // a sharding group smaller than the data-parallel group: hybrid sharding, replicated over the rest
    p.dp_replicate = dp / int(fsdp);
    run.notes += "FSDP over " + r.get("fsdp") + " ranks, replicated " + std::to_string(p.dp_replicate) + "x; ";
  }
  if (lower(r.get("notes")).find("ddp impl = local") != std::string::npos) {
    // Megatron-LM's 2021 "local" DDP all-reduces gradients after the backward pass, not overlapped
    p.overlap_grad_reduce = false;
    run.notes += "gradient all-reduce not overlapped (local DDP); ";
  }
  bool routing_stated = false;  // the row says how its MoE layers route (else its release's default)
  if (plan.model.moe) {
    // MoE runtime choices the sources state in their notes or table titles
    std::string text = lower(r.get("notes") + " " + r.get("source_detail"));
    if (has(text, "hybridep"))
      p.moe_dispatcher = MoeDispatcher::hybridep;
    else if (has(text, "deepep"))
      p.moe_dispatcher = MoeDispatcher::deepep;
    if (p.moe_dispatcher != MoeDispatcher::alltoall) run.notes += to_string(p.moe_dispatcher) + " dispatcher; ";
    if (has(text, "force-balanced") || has(text, "forced balance") || has(text, "forced load balancing")) {
      p.moe_force_balance = true;
      routing_stated = true;
    } else if (has(text, "routing: dropless")) {
      p.moe_force_balance = false;
      routing_stated = true;
    } else {
      // not stated by the row: Megatron's default, learned routing (a recipe fact may say otherwise)
      p.moe_force_balance = false;
    }
    if (has(lower(r.get("notes")), "a2a overlap")) {
      p.moe_a2a_overlap = true;
      run.notes += "EP all-to-all overlap; ";
    }
  }
  if (auto errs = validate_layout(plan.model, plan.cluster, plan.training, p); !errs.empty()) {
    bool split = false;
    for (auto& e : errs)
      split = split || e.find("layers do not split") != std::string::npos || e.find("fewer than vpp") != std::string::npos;
    if (split) {
      p.pipeline_layout = balanced_pipeline_layout(plan.model, p.pp, p.vpp);
      run.notes += "uneven pipeline layout; ";
    }
    errs = validate_layout(plan.model, plan.cluster, plan.training, p);
    if (!errs.empty()) return Error(errs);
  }
  // what the row's release applies to every run it does not say otherwise for (data/frameworks), then
  // what the recipe behind the row set and the table did not print (data/run_facts)
  if (const ReleaseDefaults* d = release_defaults(plan.training.framework, fw_text + " " + r.get("framework_version")))
    release_defaults_for(*d, plan, routing_stated, run.notes);
  apply_run_facts(facts, r, plan, run.notes);
  run.families.push_back(plan.model.moe ? "moe" : "dense");
  if (p.cp > 1) run.families.push_back("cp");
  if (is_fp8_family(*prec)) run.families.push_back("fp8");
  if (p.zero >= 2) run.families.push_back("fsdp");
  return run;
}

std::optional<double> measured_tokens_per_s_per_gpu(const CsvRow& r, const PublishedRun& run, std::string* how) {
  const Plan& p = run.plan;
  double gpus = p.parallel.world_size, gbs = double(p.training.global_batch_size), seq = double(p.training.seq_length);
  if (auto t = r.num("tokens_per_sec_per_gpu"); t && *t > 0) {
    if (how) *how = "tokens/s/GPU";
    return *t;
  }
  if (auto st = r.num("step_time_s"); st && *st > 0) {
    if (how) *how = "step time";
    return gbs * seq / (*st * gpus);
  }
  auto tf = r.num("tflops_per_gpu");
  if (!tf || *tf <= 0) return std::nullopt;
  const ModelSpec& m = p.model;
  double per_token = 0;
  std::string convention = "full";
  for (const RunFact& f : run_facts_for(r))
    if (f.fact == "tflops_flop_convention") convention = f.value;
  if (convention == "narayanan2021_hfu") {
    // 96 B s l h^2 (1 + s/6h + V/16lh): counts the recomputed forward and full attention
    double l = m.num_layers, h = double(m.hidden_size), V = double(m.vocab_size);
    per_token = 96 * l * h * h * (1 + seq / (6 * h) + V / (16 * l * h));
    if (how) *how = "TFLOP/s (Narayanan 2021 hardware FLOPs)";
  } else if (convention == "causal") {
    per_token = model_flops_per_token(m, int64_t(seq), AttentionFlops::causal);
    if (how) *how = "TFLOP/s (causal model FLOPs)";
  } else {
    per_token = model_flops_per_token(m, int64_t(seq), AttentionFlops::full);
    if (how) *how = "TFLOP/s (full-attention model FLOPs)";
  }
  return *tf * 1e12 / per_token;
}

}  // namespace mplan
