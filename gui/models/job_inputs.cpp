// Inputs panel values -> planner job (see job_inputs.h).
#include "gui/models/job_inputs.h"

#include <cctype>
#include <set>

#include "core/presets.h"

namespace mplan::gui {

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

void replaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
}

}  // namespace

std::string panelWording(std::string m) {
  // prefixes the loaders put before their own message: the panel names the field itself
  for (const char* p : {"--model: ", "--cluster: "})
    if (m.rfind(p, 0) == 0) m.erase(0, std::string(p).size());
  static const std::pair<const char*, const char*> words[] = {{"--fix/--max", "Fix/Max"},
                                                              {"--fix ", "Fix "},
                                                              {"--max ", "Max "},
                                                              {" (parallel.world_size)", ""},
                                                              {"--gpus", "GPUs"},
                                                              {"--gbs", "Global batch"},
                                                              {"--seq", "Sequence length"},
                                                              {"--precision", "Precision"},
                                                              {"--model", "Model"},
                                                              {"--cluster", "Cluster"},
                                                              {"--top", "Top K"}};
  for (const auto& [from, to] : words) replaceAll(m, from, to);
  return m;
}

Expected<std::map<std::string, int>> parseConstraints(const std::string& text, const std::string& what) {
  static const std::set<std::string> keys = {"tp", "pp", "vpp", "cp", "ep", "etp", "dp", "mbs", "zero", "recompute_layers"};
  std::map<std::string, int> out;
  std::vector<std::string> problems;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = trim(text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    pos = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string key = trim(item.substr(0, eq));
    std::string val = eq == std::string::npos ? "" : trim(item.substr(eq + 1));
    bool digits = !val.empty() && val.size() < 9;
    for (char c : val) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    if (eq == std::string::npos || !keys.count(key) || !digits) {
      problems.push_back(what + ": '" + item +
                         "' is not KEY=N with KEY one of tp, pp, vpp, cp, ep, etp, dp, mbs, zero, recompute_layers");
      continue;
    }
    out[key] = std::stoi(val);
  }
  if (!problems.empty()) return Error(problems);
  return out;
}

Expected<Plan> buildJob(const JobInputs& in) {
  std::vector<std::string> problems;
  Plan job;
  auto model = resolve_model(in.model);
  if (!model) problems.push_back("Model '" + in.model + "': " + panelWording(model.error().message()));
  auto cluster = resolve_cluster(in.cluster);
  if (!cluster) problems.push_back("Cluster '" + in.cluster + "': " + panelWording(cluster.error().message()));
  if (in.gpus < 1) problems.push_back("GPUs must be at least 1.");
  if (in.global_batch < 1) problems.push_back("Global batch must be at least 1 sequence.");
  if (in.seq_length < 1) problems.push_back("Sequence length must be at least 1 token.");
  auto prec = parse_precision(in.precision);
  if (!prec || !is_training_precision(*prec))
    problems.push_back("Precision '" + in.precision + "' is not one of " + training_precision_choices() + ".");
  if (cluster && prec && !cluster->gpu.peak(*prec))
    problems.push_back("The cluster's GPU " + cluster->gpu.name + " has no " + in.precision + " mode.");
  if (cluster && in.gpus > cluster->max_gpus())
    problems.push_back("The cluster has " + std::to_string(cluster->max_gpus()) + " GPUs; " + std::to_string(in.gpus) +
                       " were asked for.");
  if (!problems.empty()) return Error(problems);
  job.model = model.value();
  job.cluster = cluster.value();
  job.training.global_batch_size = in.global_batch;
  job.training.seq_length = in.seq_length;
  job.training.precision = *prec;
  job.training.method = in.method == "lora"  ? TrainingMethod::lora
                        : in.method == "sft" ? TrainingMethod::sft
                                             : TrainingMethod::pretrain;
  job.parallel.world_size = in.gpus;
  return job;
}

}  // namespace mplan::gui
