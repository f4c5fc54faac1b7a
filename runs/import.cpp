// Import of Megatron-LM logs into runs: plan check against the log's arguments, restart segments,
// warm-up flags, and per-step metrics derived from step time + plan.
#include "runs/import.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/counting.h"
#include "runs/stats.h"
#include "runs/warmup.h"

namespace mplan::runs {

using nlohmann::json;

double plan_flops_per_step(const Plan& plan, int64_t global_batch) {
  return model_flops_per_step(plan.model, global_batch, plan.training.seq_length, AttentionFlops::causal);
}

Expected<double> plan_peak_tflops(const Plan& plan) {
  auto pk = plan.cluster.gpu.peak(plan.training.precision);
  if (!pk || *pk <= 0)
    return Error("plan: GPU " + plan.cluster.gpu.name + " has no dense peak for precision " +
                 std::string(to_string(plan.training.precision)) + "; MFU cannot be computed");
  return *pk;
}

std::string warmup_rule_text(int w) {
  if (w <= 0) return "warm-up rule: none (--warmup 0): every logged step is measured";
  return "warm-up rule: a logged step is warm-up when the iterations it averages over include any of the first " +
         std::to_string(w) + " iterations after the job (re)started; warm-up steps are stored but left out of the "
         "run's medians (--warmup N to change)";
}

namespace {

// Python's printing of a Megatron argument vs the plan's value.
struct ArgCheck {
  const char* arg;
  std::string expected;
  const char* plan_field;
};

std::vector<std::string> check_args(const std::map<std::string, std::string>& args, const Plan& p) {
  const ParallelConfig& q = p.parallel;
  auto b = [](bool v) { return std::string(v ? "True" : "False"); };
  std::vector<ArgCheck> checks = {
      {"world_size", std::to_string(q.world_size), "parallel.world_size"},
      {"tensor_model_parallel_size", std::to_string(q.tp), "parallel.tp"},
      {"pipeline_model_parallel_size", std::to_string(q.pp), "parallel.pp"},
      {"virtual_pipeline_model_parallel_size", q.vpp > 1 ? std::to_string(q.vpp) : "None", "parallel.vpp"},
      {"context_parallel_size", std::to_string(q.cp), "parallel.cp"},
      {"expert_model_parallel_size", std::to_string(q.ep), "parallel.ep"},
      {"data_parallel_size", std::to_string(q.dp()), "parallel (dp = world / (tp*pp*cp))"},
      {"micro_batch_size", std::to_string(q.micro_batch_size), "parallel.micro_batch_size"},
      {"global_batch_size", std::to_string(p.training.global_batch_size), "training.global_batch_size"},
      {"seq_length", std::to_string(p.training.seq_length), "training.seq_length"},
      {"num_layers", std::to_string(p.model.num_layers), "model.num_layers"},
      {"hidden_size", std::to_string(p.model.hidden_size), "model.hidden_size"},
      {"num_attention_heads", std::to_string(p.model.num_attention_heads), "model.num_attention_heads"},
      {"sequence_parallel", b(q.sp), "parallel.sp"},
  };
  std::vector<std::string> out;
  for (const auto& c : checks) {
    auto it = args.find(c.arg);
    if (it == args.end()) continue;
    std::string v = it->second;
    if (std::string(c.arg) == "virtual_pipeline_model_parallel_size" && v == "1") v = "None";
    if (v != c.expected)
      out.push_back(std::string("log argument ") + c.arg + " = " + it->second + " but the plan has " + c.plan_field +
                    " = " + c.expected);
  }
  return out;
}

// Argument values worth keeping with the run (they change speed without changing the plan).
json software_from_args(const std::map<std::string, std::string>& args) {
  json sw = json::object();
  for (const char* k : {"transformer_impl", "use_flash_attn", "attention_backend", "use_distributed_optimizer",
                        "overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap", "recompute_granularity",
                        "recompute_method", "fp8", "bf16", "fp16", "moe_token_dispatcher_type", "log_interval"}) {
    auto it = args.find(k);
    if (it != args.end()) sw[k] = it->second;
  }
  return sw;
}

// Peak memory seen up to `iteration` (GiB): max over ranks of max reserved (max allocated when a
// report has no reserved figure).
double memory_until(const std::vector<MegatronMemory>& reports, int64_t iteration) {
  double peak = 0;
  for (const auto& m : reports)
    if (m.after_iteration <= iteration)
      peak = std::max(peak, (m.max_reserved_mib > 0 ? m.max_reserved_mib : m.max_allocated_mib) / 1024.0);
  return peak;
}

std::string iso_from_log(const std::string& t) {
  if (t.size() < 19) return "";
  std::string s = t.substr(0, 19);
  s[10] = 'T';
  return s + "Z";
}

// The run's plan, provenance and the check of the log's arguments against the plan.
Status start_megatron_run(const MegatronLog& log, const Plan& plan, const ImportOptions& opt, ImportResult& res) {
  RunRecord& run = res.run;
  run.plan = plan_to_json(plan);
  run.plan_key = plan_key(run.plan);
  run.source = "megatron-log";
  run.started_at = iso_from_log(log.first_datetime);
  run.warnings = log.warnings;
  res.format = log.format;
  if (log.args.empty()) {
    run.warnings.push_back("the log has no 'arguments' block, so the plan could not be checked against it");
  } else {
    auto mismatches = check_args(log.args, plan);
    if (!mismatches.empty() && !opt.allow_mismatch) {
      mismatches.push_back("the log was not produced by this plan: fix the plan file (or pass --allow-mismatch "
                           "to import anyway, keeping these as warnings)");
      return Error(mismatches);
    }
    for (auto& m : mismatches) run.warnings.push_back(m);
  }
  run.software = software_from_args(log.args);
  run.software["framework"] = "Megatron-LM";
  run.software["log_format"] = log.format;
  return {};
}

}  // namespace

Expected<ImportResult> import_megatron_log(const MegatronLog& log, const Plan& plan, const ImportOptions& opt) {
  auto peak = plan_peak_tflops(plan);
  if (!peak) return peak.error();
  ImportResult res;
  if (auto st = start_megatron_run(log, plan, opt, res); !st) return st.error();
  RunRecord& run = res.run;
  std::vector<int64_t> iters;
  std::vector<bool> restarts;
  for (const auto& it : log.iterations) {
    iters.push_back(it.iteration);
    restarts.push_back(it.after_restart);
  }
  WarmupFlags wf = flag_warmup(iters, opt.warmup_iters, restarts);
  for (const auto& r : wf.restarts) run.warnings.push_back("the log restarts at iteration " + std::to_string(r) +
                                                           " (a resumed job); warm-up is applied again after it");

  const double world = plan.parallel.world_size, seq = static_cast<double>(plan.training.seq_length);
  bool warned_gbs = false;
  std::vector<double> ratio;
  for (size_t i = 0; i < log.iterations.size(); ++i) {
    const MegatronIteration& it = log.iterations[i];
    int64_t gbs = it.global_batch_size.value_or(plan.training.global_batch_size);
    if (gbs != plan.training.global_batch_size && !warned_gbs) {
      run.warnings.push_back("iteration " + std::to_string(it.iteration) + " ran global batch size " +
                             std::to_string(gbs) + ", the plan " + std::to_string(plan.training.global_batch_size) +
                             " (batch-size ramp-up?); tokens and MFU use the logged size");
      warned_gbs = true;
    }
    StepMetric m;
    m.step = static_cast<int>(it.iteration);
    m.loss = it.loss.value_or(0);
    m.step_time_s = it.elapsed_ms / 1000.0;
    m.tokens_per_s = double(gbs) * seq / m.step_time_s;
    m.tflops_per_gpu = plan_flops_per_step(plan, gbs) / m.step_time_s / world / 1e12;
    m.mfu = m.tflops_per_gpu / peak.value();
    m.peak_memory_gib = memory_until(log.memory, it.iteration);
    m.warmup = wf.warmup[i];
    m.reported_tflops_per_gpu = it.tflops_per_gpu.value_or(0);
    if (m.warmup) ++res.warmup_excluded;
    else if (m.reported_tflops_per_gpu > 0) ratio.push_back(m.reported_tflops_per_gpu / m.tflops_per_gpu);
    run.steps.push_back(m);
  }
  if (res.warmup_excluded == static_cast<int>(run.steps.size()))
    return Error("all " + std::to_string(run.steps.size()) + " logged iterations fall in the warm-up (" +
                 warmup_rule_text(opt.warmup_iters) + "); pass a smaller --warmup");
  if (!ratio.empty()) {
    double r = median(ratio);
    if (r < 0.75 || r > 1.35)
      run.warnings.push_back("Megatron-LM reported " + std::to_string(r).substr(0, 4) +
                             "x the TFLOP/s/GPU mplan computes from the plan; check the plan's model and batch "
                             "(older Megatron-LM counts full attention: up to ~1.2x is expected)");
  }
  if (log.memory.empty()) run.warnings.push_back("the log has no memory report; peak memory is unknown (0)");
  return res;
}

}  // namespace mplan::runs
