// `mplan inspect --model NAME|FILE`: parameters (total/active, per layer type and component) and
// model FLOPs per token in the causal-halved and full-attention conventions.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/resolve.h"
#include "cli/table.h"
#include "core/counting.h"
#include "core/strict_json.h"

namespace mplan::cli {

namespace {

struct InspectOptions {
  std::string model;
  int64_t seq = 4096;
  std::string format = "table";
};

nlohmann::json layer_json(const LayerParams& lp) {
  return {{"attention", lp.attention}, {"norms", lp.norms},     {"mlp", lp.mlp},
          {"router", lp.router},       {"experts", lp.experts}, {"shared_experts", lp.shared_experts},
          {"mamba", lp.mamba},         {"total", lp.total()},   {"active", lp.active()}};
}

// A hybrid model's layers by kind (Megatron's pattern symbols): the count and one layer's parameters.
struct KindRow {
  LayerKind kind;
  const char* symbol;
  const char* name;
  int count = 0;
  LayerParams params;
};
std::vector<KindRow> hybrid_kinds(const ModelSpec& m) {
  std::vector<KindRow> rows = {{LayerKind::mamba, "M", "mamba", 0, {}},
                               {LayerKind::attention, "*", "attention", 0, {}},
                               {LayerKind::mlp, "-", "mlp", 0, {}},
                               {LayerKind::moe, "E", "moe", 0, {}}};
  for (int i = 0; i < m.num_layers; ++i)
    for (KindRow& r : rows)
      if (m.layer_kind(i) == r.kind && r.count++ == 0) r.params = layer_params_at(m, i);
  return rows;
}

int run_inspect(const InspectOptions& o) {
  ModelSpec m = require_model(o.model);
  ParamCounts pc = count_params(m);
  double causal = model_flops_per_token(m, o.seq, AttentionFlops::causal);
  double full = model_flops_per_token(m, o.seq, AttentionFlops::full);
  int moe_layers = m.num_moe_layers(), dense_layers = m.num_layers - moe_layers;
  const std::vector<KindRow> kinds = m.is_hybrid() ? hybrid_kinds(m) : std::vector<KindRow>{};
  if (o.format == "json") {
    nlohmann::json j = {{"model", model_to_json(m)},
                        {"params_total", pc.total},
                        {"params_active", pc.active},
                        {"params_active_excl_embedding", pc.active_excl_embedding},
                        {"params_embedding", pc.embedding},
                        {"params_output", pc.output},
                        {"params_final_norm", pc.final_norm},
                        {"params_mtp", pc.mtp},
                        {"dense_layers", dense_layers},
                        {"moe_layers", moe_layers},
                        {"dense_layer", layer_json(pc.dense_layer)},
                        {"seq_length", o.seq},
                        {"flops_per_token_causal", causal},
                        {"flops_per_token_full_attention", full}};
    if (m.moe) j["moe_layer"] = layer_json(pc.moe_layer);
    if (m.is_hybrid()) {
      j["hybrid_override_pattern"] = m.hybrid_override_pattern;
      for (const KindRow& r : kinds)
        j["hybrid_layers"][r.name] = {{"symbol", r.symbol}, {"count", r.count}, {"layer", layer_json(r.params)}};
    }
    std::cout << dump_json(j, 2) << "\n";
    return kExitOk;
  }
  std::cout << "model " << m.name << ": " << m.num_layers << " layers (";
  if (m.is_hybrid()) {
    const char* sep = "";
    for (const KindRow& r : kinds)
      if (r.count > 0) std::cout << sep << r.count << " " << r.name << " (" << r.symbol << ")", sep = ", ";
  } else {
    std::cout << dense_layers << " dense";
    if (moe_layers) std::cout << ", " << moe_layers << " MoE";
  }
  std::cout << "), hidden " << m.hidden_size << ", " << m.num_attention_heads << " heads / " << m.num_query_groups
            << " query groups, head dim " << m.kv_channels << ", vocab " << m.vocab_size << ", " << to_string(m.activation)
            << ", " << to_string(m.norm) << (m.mla ? ", MLA" : "") << "\n\n";
  TextTable t({"component", "per layer", "layers", "total", "share"});
  auto add = [&](const std::string& name, double per, int n) {
    if (per <= 0 || n <= 0) return;
    double tot = per * n;
    t.add_row({name, fmt_count(per), std::to_string(n), fmt_count(tot), fmt_pct(tot / pc.total)});
  };
  add("embedding", pc.embedding, 1);
  if (m.is_hybrid()) {
    for (const KindRow& r : kinds) {
      const std::string of = std::string(" (") + r.symbol + " layers)";
      add("mamba mixer" + of, r.params.mamba, r.count);
      add("attention" + of, r.params.attention, r.count);
      add("mlp" + of, r.params.mlp, r.count);
      add("router" + of, r.params.router, r.count);
      add("routed experts" + of, r.params.experts, r.count);
      add("shared experts" + of, r.params.shared_experts, r.count);
      add("norm" + of, r.params.norms, r.count);
    }
    dense_layers = moe_layers = 0;  // (listed by kind above)
  }
  add("attention (dense layers)", pc.dense_layer.attention, dense_layers);
  add("norms (dense layers)", pc.dense_layer.norms, dense_layers);
  add("mlp (dense layers)", pc.dense_layer.mlp, dense_layers);
  if (m.moe && moe_layers > 0) {
    add("attention (MoE layers)", pc.moe_layer.attention, moe_layers);
    add("norms (MoE layers)", pc.moe_layer.norms, moe_layers);
    add("router", pc.moe_layer.router, moe_layers);
    add("routed experts", pc.moe_layer.experts, moe_layers);
    add("shared experts", pc.moe_layer.shared_experts, moe_layers);
  }
  add("final norm", pc.final_norm, 1);
  add("output (untied LM head)", pc.output, 1);
  std::cout << t.render();
  std::cout << "\nparameters: " << fmt_count(pc.total) << " total (" << fmt(pc.total, 0) << ")";
  if (m.moe)
    std::cout << ", " << fmt_count(pc.active) << " active per token (" << fmt_count(pc.active_excl_embedding)
              << " without the input embedding table)";
  std::cout << "\n";
  if (pc.mtp > 0) std::cout << "multi-token prediction modules: " << fmt_count(pc.mtp) << " more (not in the total)\n";
  std::cout << "model FLOPs per token at seq " << o.seq << " (forward+backward, Megatron-LM convention): " << fmt(causal / 1e9, 2)
            << " GFLOP causal, " << fmt(full / 1e9, 2) << " GFLOP full attention\n";
  return kExitOk;
}

}  // namespace

void add_inspect_command(CLI::App& app, Runner& run) {
  auto o = std::make_shared<InspectOptions>();
  auto* sub = app.add_subcommand("inspect", "Parameter and FLOP breakdown of a model");
  sub->add_option("--model", o->model, "preset name, mplan model JSON or Hugging Face config.json")->required();
  sub->add_option("--seq", o->seq, "sequence length for FLOPs per token")->check(int_range(1, kMaxSeq));
  sub->add_option("--format", o->format, "table|json")->check(format_choice({"table", "json"}));
  sub->callback([&run, o] { run = [o] { return run_inspect(*o); }; });
}

}  // namespace mplan::cli
