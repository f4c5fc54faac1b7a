// Applying published-run facts to a plan (see run_facts.h). A stated CSV column wins over a recipe
// fact; each group of facts is applied only if the layout stays valid (else it is noted as skipped).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "core/framework_profile.h"
#include "core/megatron_rules.h"
#include "core/parallel_fields.h"
#include "simulator/run_facts.h"

namespace mplan {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
bool truthy(const std::string& v) {
  std::string l = lower(v);
  return l == "true" || l == "1" || l == "yes" || l == "on" || l.rfind("async", 0) == 0;
}
bool none_value(const std::string& v) {
  std::string l = lower(v);
  return l.empty() || l == "none" || l == "[]" || l == "null" || l == "false";
}
std::vector<std::string> names(const std::string& v) {
  std::string t;
  for (char c : v) t += (c == '[' || c == ']' || c == '\'' || c == '"') ? ' ' : c;
  return split_list(t);
}
// Known names of a module table found in free text ("selective (moe_act, layernorm)").
template <typename E>
ModuleSet<E> known_names(const std::string& text, const std::vector<std::pair<std::string, E>>& table) {
  ModuleSet<E> s;
  std::string t;
  for (char c : text) t += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : ' ';
  for (const auto& w : split_list(t))
    for (const auto& [n, e] : table)
      if (w == n) s.add(e);
  return s;
}

struct Applier {
  Plan& plan;
  std::string& notes;
  std::map<std::string, const RunFact*> last;
  std::set<std::string>* read;  // the fact names asked for, when the caller wants them
  const RunFact* get(const char* name) const {
    if (read) read->insert(name);
    auto it = last.find(name);
    return it == last.end() ? nullptr : it->second;
  }
  // Applies a change if the layout stays valid.
  void attempt(const std::string& what, const std::function<void(Plan&)>& change) {
    Plan trial = plan;
    change(trial);
    if (validate_layout(trial.model, trial.cluster, trial.training, trial.parallel).empty()) {
      plan = trial;
      notes += what + "; ";
    } else {
      notes += what + " skipped (breaks a layout rule); ";
    }
  }
};

void apply_recompute(Applier& a, const CsvRow& row) {
  std::string rc = lower(row.get("recompute"));
  bool stated = !rc.empty() && rc != "none listed";
  if (stated) {
    // modules and offloading named in the row's own text
    auto mods = known_names(rc, recompute_module_names());
    size_t off_at = rc.find("offload");
    auto off = off_at == std::string::npos ? OffloadModules{} : known_names(rc.substr(off_at), offload_module_names());
    if (a.plan.parallel.recompute == Recompute::selective && !mods.empty())
      a.attempt("recompute modules " + join_names(to_names(mods)) + " (row)",
                [&](Plan& p) { p.parallel.recompute_modules = mods; });
    if (!off.empty())
      a.attempt("offload modules " + join_names(to_names(off)) + " (row)", [&](Plan& p) { p.parallel.offload_modules = off; });
  } else if (const RunFact* f = a.get("recompute_granularity")) {
    std::string v = lower(f->value);
    Recompute r = v.rfind("full", 0) == 0        ? Recompute::full
                  : v.rfind("selective", 0) == 0 ? Recompute::selective
                                                 : Recompute::none;
    if (v != "not stated") a.attempt("recompute " + to_string(r) + " (recipe)", [&](Plan& p) { p.parallel.recompute = r; });
  }
  if (const RunFact* f = a.get("recompute_modules");
      f && a.plan.parallel.recompute == Recompute::selective && a.plan.parallel.recompute_modules.empty()) {
    std::string bad;
    auto mods = parse_recompute_modules(names(f->value), &bad);
    if (mods && !mods->empty())
      a.attempt("recompute modules " + join_names(to_names(*mods)) + " (recipe)",
                [&](Plan& p) { p.parallel.recompute_modules = *mods; });
  }
  if (const RunFact* m = a.get("recompute_method"); m && a.plan.parallel.recompute == Recompute::full) {
    const RunFact* n = a.get("recompute_num_layers");
    if (lower(m->value) == "block" && n)
      a.attempt("recompute " + n->value + " layers per chunk (recipe)",
                [&](Plan& p) { p.parallel.recompute_num_layers = std::stoi(n->value); });
  }
}

// gradient dtype, fp8 primary weights, master-weight storage, the fused loss and CUDA graphs are options
// of Megatron's model states
bool megatron_states(const Plan& p) {
  return framework_profile(p.training.framework).model_states == ModelStateLayout::mixed_precision_master;
}

void apply_optimizer(Applier& a, const CsvRow& row) {
  const FrameworkProfile& fw = framework_profile(a.plan.training.framework);
  if (const RunFact* rp = a.get("remat_policy"); rp && fw.remat_style == RematStyle::jax_policy) {
    if (auto pol = parse_enum<RematPolicy>(lower(rp->value)))
      a.attempt("remat policy " + rp->value + " (recipe)", [&](Plan& p) {
        p.parallel.recompute = *pol == RematPolicy::full ? Recompute::full : Recompute::selective;
        p.parallel.remat_policy = *pol == RematPolicy::full ? RematPolicy::none : *pol;
      });
  }
  if (row.get("dist_optimizer").empty() && row.get("fsdp").empty()) {
    if (const RunFact* f = a.get("use_megatron_fsdp"); f && truthy(f->value)) {
      const RunFact* st = a.get("data_parallel_sharding_strategy");
      std::string v = st ? lower(st->value) : "optim_grads_params";
      int z = megatron_fsdp_zero(v).value_or(0);
      a.attempt("Megatron-FSDP " + v + " (recipe)", [&](Plan& p) { p.parallel.zero = z; });
    } else if (const RunFact* d = a.get("use_distributed_optimizer")) {
      int z = truthy(d->value) ? 1 : 0;
      a.attempt(std::string(z ? "distributed optimizer" : "no distributed optimizer") + " (recipe)",
                [&](Plan& p) { p.parallel.zero = z; });
    }
  }
  if (!megatron_states(a.plan)) return;
  const RunFact* g = a.get("grad_reduce_in_fp32");
  const RunFact* gd = a.get("grad_reduce_dtype");
  bool bf16 = (g && lower(g->value) == "false") || (gd && lower(gd->value) == "bf16");
  if (bf16 && a.plan.training.precision != Precision::fp32)
    a.attempt("bf16 gradients (recipe)", [](Plan& p) { p.parallel.grad_reduce_in_bf16 = true; });
  const RunFact* q = a.get(a.plan.training.precision == Precision::nvfp4 ? "fp4_param_gather" : "fp8_param_gather");
  if (q && truthy(q->value) && is_fp8_family(a.plan.training.precision))
    a.attempt("fp8 parameters (recipe)", [](Plan& p) { p.parallel.fp8_param_gather = true; });
}

void apply_loss_fusion(Applier& a, const CsvRow&) {
  if (!megatron_states(a.plan)) return;
  const RunFact* ce = a.get("cross_entropy_loss_fusion");
  const RunFact* impl = a.get("cross_entropy_fusion_impl");
  if (ce && truthy(ce->value) && impl && lower(impl->value) == "te")
    a.attempt("fused cross-entropy (recipe)", [](Plan& p) { p.parallel.cross_entropy_fusion = true; });
}

void apply_offload(Applier& a, const CsvRow&) {
  const RunFact* c = a.get("cpu_offloading");
  const RunFact* n = a.get("cpu_offloading_num_layers");
  if (c && truthy(c->value) && n)
    a.attempt("activation offloading of " + n->value + " layers (recipe)",
              [&](Plan& p) { p.parallel.cpu_offload_layers = std::stoi(n->value); });
  const RunFact* fg = a.get("fine_grained_activation_offloading");
  const RunFact* om = a.get("offload_modules");
  if (fg && truthy(fg->value) && om && !none_value(om->value)) {
    OffloadModules mods = known_names(om->value, offload_module_names());
    if (om->value.find("fused_group_mlp") != std::string::npos) mods.add(OffloadModule::expert_fc1);  // the grouped MLP's input
    if (!mods.empty())
      a.attempt("offload modules " + join_names(to_names(mods)) + " (recipe)",
                [&](Plan& p) { p.parallel.offload_modules = mods; });
  }
}

void apply_moe(Applier& a, const CsvRow&) {
  if (!a.plan.model.moe) return;
  if (const RunFact* f = a.get("moe_token_dispatcher_type")) {
    std::string v = lower(f->value), backend = lower(f->note);
    if (const RunFact* b = a.get("moe_flex_dispatcher_backend")) backend = lower(b->value);
    MoeDispatcher d = v == "alltoall"                                 ? MoeDispatcher::alltoall
                      : backend.find("hybridep") != std::string::npos ? MoeDispatcher::hybridep
                                                                      : MoeDispatcher::deepep;
    if (v == "alltoall" || v == "flex")
      a.attempt(to_string(d) + " dispatcher (recipe)", [&](Plan& p) { p.parallel.moe_dispatcher = d; });
  }
  if (const RunFact* f = a.get("moe_expert_capacity_factor"); f && !none_value(f->value)) {
    double cf = std::atof(f->value.c_str());
    bool pad = lower(f->note).find("pad") != std::string::npos;
    if (const RunFact* pf = a.get("moe_pad_expert_input_to_capacity")) pad = truthy(pf->value);
    if (cf > 0)
      a.attempt("capacity factor " + f->value + (pad ? " padded" : "") + " (recipe)", [&](Plan& p) {
        p.parallel.moe_capacity_factor = cf;
        p.parallel.moe_pad_to_capacity = pad;
      });
  }
}

void apply_runtime(Applier& a, const CsvRow&) {
  if (const RunFact* f = a.get("packed_doc_tokens"); f && !none_value(f->value)) {
    const int64_t d = std::atoll(f->value.c_str());
    if (d > 0 && d <= a.plan.training.seq_length)
      a.attempt("packed sequences, " + f->value + "-token documents (recipe)",
                [&](Plan& p) { p.training.packed_doc_tokens = d; });
  }
  if (const RunFact* f = a.get("torch_compile"); f && framework_profile(a.plan.training.framework).supports_torch_compile)
    a.attempt(std::string(truthy(f->value) ? "torch.compile" : "eager") + " (recipe)",
              [&](Plan& p) { p.training.torch_compile = truthy(f->value); });
  if (const RunFact* f = a.get("hidden_dropout"))
    a.attempt("dropout " + f->value + " (recipe)", [&](Plan& p) {
      p.model.hidden_dropout = std::atof(f->value.c_str());
      p.model.attention_dropout = p.model.hidden_dropout;
    });
}

void apply_pipeline(Applier& a, const CsvRow&) {
  const ParallelConfig& q = a.plan.parallel;
  if (q.pp <= 1) return;
  if (const RunFact* f = a.get("pipeline_model_parallel_layout"); f && !none_value(f->value)) {
    auto layout = parse_megatron_pipeline_layout(f->value, q.pp, q.vpp);
    if (!layout.empty()) {
      a.attempt("pipeline layout " + f->value + " (recipe)", [&](Plan& p) {
        p.parallel.pipeline_layout = layout;
        p.parallel.num_layers_in_first_pipeline_stage = p.parallel.num_layers_in_last_pipeline_stage = 0;
      });
      return;
    }
  }
  // Megatron's --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers (NeMo's
  // num_layers_in_first/last_pipeline_stage): the middle stages share the rest evenly
  const RunFact* first = a.get("num_layers_in_first_pipeline_stage");
  const RunFact* last = a.get("num_layers_in_last_pipeline_stage");
  if ((first && !none_value(first->value)) || (last && !none_value(last->value))) {
    auto count = [](const RunFact* f) { return f && !none_value(f->value) ? std::atoi(f->value.c_str()) : 0; };
    const int nf = count(first), nl = count(last);
    if (nf >= 0 && nl >= 0) {
      a.attempt("first/last pipeline stage " + std::to_string(nf) + "/" + std::to_string(nl) + " layers (recipe)", [&](Plan& p) {
        p.parallel.pipeline_layout.clear();
        p.parallel.num_layers_in_first_pipeline_stage = nf;
        p.parallel.num_layers_in_last_pipeline_stage = nl;
      });
      return;
    }
  }
  const RunFact* e = a.get("account_for_embedding_in_pipeline_split");
  const RunFact* l = a.get("account_for_loss_in_pipeline_split");
  if (e && l && truthy(e->value) && truthy(l->value))
    a.attempt("pipeline split accounting for embedding and loss (recipe)", [&](Plan& p) {
      p.parallel.pipeline_layout = balanced_pipeline_layout(p.model, p.parallel.pp, p.parallel.vpp);
      p.parallel.num_layers_in_first_pipeline_stage = p.parallel.num_layers_in_last_pipeline_stage = 0;
    });
}

bool always(const Plan&) { return true; }
bool has_moe(const Plan& p) { return p.model.moe.has_value(); }
bool tp_sp(const Plan& p) { return p.parallel.tp > 1 && p.parallel.sp; }
bool cp_on(const Plan& p) { return p.parallel.cp > 1; }

// One step of applying the facts, in order: a plan field's value under its descriptor row's run-fact
// name (ParallelField::log; a boolean read from truthy text, a choice lower-cased), applied when
// `applies` holds and noted as `what` ("{}" is the value; a boolean's "if true|if false", or without
// '|' applied only when true); or a rule of its own (`custom`) for facts that are not one field's value.
struct FactStep {
  void (*custom)(Applier&, const CsvRow&) = nullptr;
  const char* field = nullptr;
  bool (*applies)(const Plan&) = always;
  const char* what = "";
};

void apply_field_fact(Applier& a, const FactStep& s) {
  const ParallelField& f = *parallel_field(s.field);
  const RunFact* r = a.get(f.log);
  if (!r || !s.applies(a.plan)) return;
  std::string what = s.what, text = lower(r->value);
  if (f.type() == FieldType::boolean) {
    text = truthy(r->value) ? "true" : "false";
    const size_t bar = what.find('|');
    if (bar == std::string::npos && text == "false") return;
    what = text == "true" ? what.substr(0, bar) : what.substr(bar + 1);
  } else if (ParallelConfig probe; !set_field_text(f, probe, text).empty()) {
    return;  // not a value of the field
  }
  if (size_t at = what.find("{}"); at != std::string::npos) what.replace(at, 2, r->value);
  a.attempt(what + " (recipe)", [&](Plan& p) { set_field_text(f, p.parallel, text); });
}

const std::vector<FactStep>& fact_steps() {
  static const std::vector<FactStep> steps = {
      {apply_recompute},
      {apply_optimizer},
      {nullptr, "main_params", megatron_states, "master weights {}"},
      {nullptr, "adam_states_bf16", megatron_states, "bf16 Adam moments"},
      {apply_loss_fusion},
      {nullptr, "cuda_graph_impl", megatron_states, "CUDA graphs {}"},
      {apply_offload},
      {nullptr, "moe_force_balance", has_moe, "forced MoE routing|learned MoE routing"},
      {apply_moe},
      {nullptr, "moe_a2a_overlap", has_moe, "EP all-to-all overlap"},
      {nullptr, "moe_fused_grouped_mlp", has_moe, "fused grouped expert MLP"},
      {nullptr, "tp_comm_overlap", tp_sp, "TP-comm overlap|no TP-comm overlap"},
      {nullptr, "overlap_grad_reduce", always, "overlapped gradient reduction|no overlapped gradient reduction"},
      {nullptr, "cp_comm_type", cp_on, "CP {}"},
      {nullptr, "attention_backend", always, "{} attention"},
      {apply_runtime},
      {apply_pipeline},
  };
  return steps;
}

}  // namespace

void apply_run_facts(const std::vector<RunFact>& facts, const CsvRow& row, Plan& plan, std::string& notes,
                     std::set<std::string>* read) {
  Applier a{plan, notes, {}, read};
  for (const RunFact& f : facts) a.last[f.fact] = &f;
  for (const FactStep& s : fact_steps()) {
    if (s.custom)
      s.custom(a, row);
    else
      apply_field_fact(a, s);
  }
}

}  // namespace mplan
