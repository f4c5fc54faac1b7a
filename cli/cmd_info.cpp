// `mplan version`, `mplan models`, `mplan clusters`: what this build knows.
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

void add_info_commands(CLI::App& app, Runner& run) {
  auto* v = app.add_subcommand("version", "Print the version and build configuration");
  v->callback([&run] {
    run = [] {
      std::cout << "mplan " << MPLAN_VERSION << "\n"
                << "  CUDA backend: " << MPLAN_CUDA_STATE << "\n"
                << "  MPI: " << MPLAN_MPI_STATE << "\n"
                << "  GUI: " << MPLAN_GUI_STATE << "\n";
      return kExitOk;
    };
  });

  auto models_format = std::make_shared<std::string>("table");
  auto* m = app.add_subcommand("models", "List the model presets");
  m->add_option("--format", *models_format, "table|json")->check(format_choice({"table", "json"}));
  m->callback([&run, models_format] {
    run = [models_format] {
      nlohmann::json out = nlohmann::json::array();
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
      if (*models_format == "json")
        std::cout << dump_json(out, 2) << "\n";
      else
        std::cout << t.render();
      return kExitOk;
    };
  });

  auto clusters_format = std::make_shared<std::string>("table");
  auto* c = app.add_subcommand("clusters", "List the cluster presets");
  c->add_option("--format", *clusters_format, "table|json")->check(format_choice({"table", "json"}));
  c->callback([&run, clusters_format] {
    run = [clusters_format] {
      nlohmann::json out = nlohmann::json::array();
      TextTable t({"name", "gpu", "bf16 TFLOP/s", "fp8 TFLOP/s", "memory GiB", "GPUs/node", "NVLink domain", "NVLink GB/s",
                   "network GB/s"});
      for (const auto& name : cluster_preset_names()) {
        auto cc = cluster_preset(name);
        if (!cc) throw std::runtime_error("preset " + name + " is invalid: " + cc.error().message());
        auto fp8 = cc->gpu.peak(Precision::fp8);
        t.add_row({name, cc->gpu.name, fmt(cc->gpu.peak(Precision::bf16).value_or(0), 1), fp8 ? fmt(*fp8, 1) : "-",
                   fmt(cc->gpu.memory_gib, 0), std::to_string(cc->gpus_per_node), std::to_string(cc->nvlink_domain_size),
                   fmt(cc->scale_up_bw_gbps, 0), fmt(cc->scale_out_bw_gbps, 0)});
        out.push_back(cluster_to_json(*cc));
      }
      if (*clusters_format == "json")
        std::cout << dump_json(out, 2) << "\n";
      else
        std::cout << t.render();
      return kExitOk;
    };
  });
}

}  // namespace mplan::cli
