// What the user typed into the inputs panel (or on the command line of --screenshot), and how it
// becomes a planner job: model and cluster resolved (preset name, mplan JSON or HF config.json),
// batch, sequence, precision, and the --fix/--max constraints parsed. Plain C++ (no Qt).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "core/plan.h"
#include "core/status.h"

namespace mplan::gui {

struct JobInputs {
  std::string model = "llama3-8b";   // preset name or file
  std::string cluster = "dgx-h100";  // preset name or file
  int gpus = 64;
  int64_t global_batch = 256;
  int64_t seq_length = 4096;
  std::string precision = "bf16";
  std::string method = "pretrain";  // pretrain | sft | lora
  std::string fix;                  // "tp=8,pp=4"
  std::string max;                  // "tp=8,pp=32"
  int top_k = 20;
  bool memory_objective = false;
  bool allow_tp_across_nvlink = false;
  bool operator==(const JobInputs&) const = default;
};

// A message of the loaders or the planner worded for the inputs panel: the CLI's flags become the
// panel's field names ("--fix tp=8 conflicts with --max tp=4" -> "Fix tp=8 conflicts with Max tp=4",
// "--model: 'x' is neither ..." -> "'x' is neither ...").
std::string panelWording(std::string message);

// "tp=8, pp=4" -> {tp: 8, pp: 4}. Keys as planner.h lists them; errors name the bad item.
Expected<std::map<std::string, int>> parseConstraints(const std::string& text, const std::string& what);

// Resolves model and cluster and checks the numbers; the plan's layout is left at its defaults and
// parallel.world_size = gpus (the planner's job format).
Expected<Plan> buildJob(const JobInputs& in);

}  // namespace mplan::gui
