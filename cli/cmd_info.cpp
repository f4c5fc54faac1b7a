// `mplan version`, `mplan models`, `mplan clusters`: what this build knows.
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/counting.h"
#include "core/presets.h"
#include "core/strict_json.h"

namespace mplan::cli {

CLI::Validator format_choice(std::initializer_list<const char*> choices) {
  std::vector<std::string> c(choices.begin(), choices.end());
  return CLI::Validator(
      [c](std::string& s) -> std::string {
        for (const auto& x : c)
          if (s == x) return {};
        std::string all;
        for (const auto& x : c) all += (all.empty() ? "" : "|") + x;
        return "'" + s + "' is not one of " + all;
      },
      "", "format");
}

namespace {

// A subcommand that lists presets as a table or (--format json) as JSON; `list` fills both.
void add_listing(CLI::App& app, Runner& run, const char* name, const char* description,
                 std::function<TextTable(nlohmann::json&)> list) {
  auto format = std::make_shared<std::string>("table");
  auto* sub = app.add_subcommand(name, description);
  sub->add_option("--format", *format, "table|json")->check(format_choice({"table", "json"}));
  sub->callback([&run, format, list = std::move(list)] {
    run = [format, list] {
      nlohmann::json out = nlohmann::json::array();
      TextTable t = list(out);
      if (*format == "json")
        std::cout << dump_json(out, 2) << "\n";
      else
        std::cout << t.render();
      return kExitOk;
    };
  });
}

TextTable list_models(nlohmann::json& out) {
  TextTable t({"name", "layers", "hidden", "heads", "kv groups", "experts", "params", "active"});
  for (const auto& name : model_preset_names()) {
    auto mm = model_preset(name);
    if (!mm) throw std::runtime_error("preset " + name + " is invalid: " + mm.error().message());
    ParamCounts pc = count_params(*mm);
    int experts = mm->moe ? mm->moe->num_experts : 0;
    t.add_row({name, std::to_string(mm->num_layers), std::to_string(mm->hidden_size), std::to_string(mm->num_attention_heads),
               std::to_string(mm->num_query_groups),
               experts ? std::to_string(experts) + " top-" + std::to_string(mm->moe->top_k) : "-", fmt_count(pc.total),
               fmt_count(pc.active)});
    out.push_back({{"name", name}, {"params", pc.total}, {"active_params", pc.active}, {"model", model_to_json(*mm)}});
  }
  return t;
}

TextTable list_clusters(nlohmann::json& out) {
  TextTable t(
      {"name", "gpu", "bf16 TFLOP/s", "fp8 TFLOP/s", "memory GiB", "GPUs/node", "NVLink domain", "NVLink GB/s", "network GB/s"});
  for (const auto& name : cluster_preset_names()) {
    auto cc = cluster_preset(name);
    if (!cc) throw std::runtime_error("preset " + name + " is invalid: " + cc.error().message());
    auto fp8 = cc->gpu.peak(Precision::fp8);
    t.add_row({name, cc->gpu.name, fmt(cc->gpu.peak(Precision::bf16).value_or(0), 1), fp8 ? fmt(*fp8, 1) : "-",
               fmt(cc->gpu.memory_gib, 0), std::to_string(cc->gpus_per_node), std::to_string(cc->nvlink_domain_size),
               fmt(cc->scale_up_bw_gbps, 0), fmt(cc->scale_out_bw_gbps, 0)});
    out.push_back(cluster_to_json(*cc));
  }
  return t;
}

}  // namespace

void add_info_commands(CLI::App& app, Runner& run) {
  auto* v = app.add_subcommand("version", "Print the version and build configuration");
  v->callback([&run] {
    run = [] {
      std::cout << "mplan " << MPLAN_VERSION << "\n"
                << "  CUDA backend: " << MPLAN_CUDA_STATE << "\n"
                << "  MPI: " << MPLAN_MPI_STATE << "\n"
                << "  GUI: " << MPLAN_GUI_STATE << "\n"
                << "  allocator: " << MPLAN_ALLOCATOR_STATE << "\n";
      return kExitOk;
    };
  });
  add_listing(app, run, "models", "List the model presets", list_models);
  add_listing(app, run, "clusters", "List the cluster presets", list_clusters);
}

}  // namespace mplan::cli
