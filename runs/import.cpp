// Import of one job of a training log into a run: plan check against the logged configuration,
// restart segments, warm-up and skipped flags, per-step metrics derived from step time + plan,
// memory per job and launch, plausibility of the MFU, started_at in UTC.
#include "runs/import.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/counting.h"
#include "runs/warmup.h"

namespace mplan::runs {

using nlohmann::json;

namespace {

// Argument values worth keeping with the run (they change speed without changing the plan).
json software_from_config(const LogLaunch& l) {
  json sw = json::object();
  for (const char* k :
       {"transformer_impl", "use_flash_attn", "attention_backend", "use_distributed_optimizer", "overlap_grad_reduce",
        "overlap_param_gather", "tp_comm_overlap", "recompute_granularity", "recompute_method", "fp8", "fp8_recipe", "bf16",
        "fp16", "moe_token_dispatcher_type", "log_interval", "deepspeed", "zero_stage"}) {
    auto it = l.args.find(k);
    if (it != l.args.end()) sw[k] = it->second;
  }
  for (const char* k : {"model.transformer_impl", "model.recompute_granularity", "model.moe_token_dispatcher_type",
                        "model.tp_comm_overlap", "ddp.overlap_grad_reduce", "ddp.overlap_param_gather",
                        "ddp.use_distributed_optimizer", "logger.log_interval", "mixed_precision"}) {
    auto it = l.bridge_yaml.find(k);
    if (it != l.bridge_yaml.end()) sw[k] = it->second;
  }
  return sw;
}

// Peak memory (GiB) of a step in launch `launch` at `iteration`: max over ranks of max reserved (max
// allocated when a report has no reserved figure) over the reports of earlier launches of the job and
// of this launch up to the iteration. Absent when no report qualifies.
std::optional<double> memory_until(const LogJob& job, size_t launch, int64_t iteration) {
  std::optional<double> peak;
  for (size_t k = 0; k <= launch && k < job.launches.size(); ++k)
    for (const auto& m : job.launches[k].memory) {
      if (k == launch && m.after_iteration > iteration) continue;
      double v = (m.max_reserved_mib > 0 ? m.max_reserved_mib : m.max_allocated_mib) / 1024.0;
      if (v > 0) peak = std::max(peak.value_or(0.0), v);
    }
  return peak;
}

bool full_recompute(const LogConfig& c) {
  auto it = c.fields.find("recompute");
  return it != c.fields.end() && it->second.normalized == "full";
}

// The largest rank in the job's memory reports must exist in the plan's world.
std::vector<std::string> rank_problems(const LogJob& job, const Plan& plan) {
  int max_rank = -1;
  for (const auto& l : job.launches)
    for (const auto& m : l.memory) max_rank = std::max(max_rank, m.rank);
  if (max_rank >= plan.parallel.world_size)
    return {"the log has a memory report of rank " + std::to_string(max_rank) +
            " but the plan has parallel.world_size = " + std::to_string(plan.parallel.world_size)};
  return {};
}

// The run's plan, provenance, configuration check and started_at.
Status start_run(const LogJob& job, const Plan& plan, const ImportOptions& opt, ImportResult& res) {
  RunRecord& run = res.run;
  const LogLaunch& first = job.launches.front();
  run.plan = plan_to_json(plan);
  run.plan_key = plan_key(run.plan);
  run.source = job.framework == "NeMo" ? "nemo-log" : "megatron-log";
  res.format = job.format;
  res.framework = job.framework;
  res.job = describe_job(job);
  std::vector<std::string> mismatches = check_plan(job.config, plan);
  for (auto& p : rank_problems(job, plan)) mismatches.push_back(p);
  if (job.config.empty())
    run.warnings.push_back(job.framework == "NeMo"
                               ? "NeMo logs print no configuration mplan reads, so the plan could not be checked "
                                 "against the log (only the MFU's plausibility)"
                               : "the log has no 'arguments' block or configuration dump, so the plan could not be "
                                 "checked against it");
  for (const auto& n : job.config.notes) run.warnings.push_back(n);
  if (!mismatches.empty() && !opt.allow_mismatch) {
    mismatches.insert(mismatches.begin(), res.job + " was not produced by this plan:");
    mismatches.push_back("fix the plan file (or pass --allow-mismatch to import anyway, keeping these as warnings)");
    return Error(mismatches);
  }
  for (auto& m : mismatches) run.warnings.push_back(m);
  for (const auto& l : job.launches) {
    if (run.software.empty()) run.software = software_from_config(l);
    if (!run.software.empty()) break;
  }
  if (run.software.is_null()) run.software = json::object();
  run.software["framework"] = job.framework;
  run.software["log_format"] = job.format;
  run.started_at = local_time_to_utc(first.first_datetime, first.zone, opt.tz, run.warnings);
  return {};
}

struct Flat {
  const LogIteration* it;
  size_t launch;
};

}  // namespace

Expected<ImportResult> import_log_job(const LogJob& job, const Plan& plan, const ImportOptions& opt) {
  auto peak = plan_peak_tflops(plan);
  if (!peak) return peak.error();
  ImportResult res;
  if (auto st = start_run(job, plan, opt, res); !st) return st.error();
  RunRecord& run = res.run;
  std::vector<Flat> flat;
  std::vector<int64_t> iters;
  std::vector<bool> restarts;
  for (size_t k = 0; k < job.launches.size(); ++k)
    for (size_t i = 0; i < job.launches[k].iterations.size(); ++i) {
      flat.push_back({&job.launches[k].iterations[i], k});
      iters.push_back(job.launches[k].iterations[i].iteration);
      restarts.push_back(k > 0 && i == 0);
    }
  WarmupFlags wf = flag_warmup(iters, opt.warmup_iters, restarts);
  for (auto r : wf.restarts)
    run.warnings.push_back("the log restarts at iteration " + std::to_string(r) +
                           " (the job resumed with the same configuration); warm-up is applied again after it");
  const double world = plan.parallel.world_size, seq = static_cast<double>(plan.training.seq_length);
  bool warned_gbs = false, warned_seq = false;
  for (size_t i = 0; i < flat.size(); ++i) {
    const LogIteration& it = *flat[i].it;
    int64_t gbs = it.global_batch_size.value_or(plan.training.global_batch_size);
    if (gbs != plan.training.global_batch_size && !warned_gbs) {
      run.warnings.push_back("iteration " + std::to_string(it.iteration) + " ran global batch size " + std::to_string(gbs) +
                             ", the plan " + std::to_string(plan.training.global_batch_size) +
                             " (batch-size ramp-up?); tokens and MFU use the logged size");
      warned_gbs = true;
    }
    if (it.actual_seq_length && *it.actual_seq_length != plan.training.seq_length && !warned_seq) {
      run.warnings.push_back("iteration " + std::to_string(it.iteration) + " trained sequences of " +
                             std::to_string(*it.actual_seq_length) + " tokens (curriculum?), the plan " +
                             std::to_string(plan.training.seq_length) + "; MFU uses the plan's length");
      warned_seq = true;
    }
    StepMetric m;
    m.step = static_cast<int>(it.iteration);
    if (it.loss && std::isfinite(*it.loss)) m.loss = it.loss;
    m.step_time_s = it.elapsed_ms / 1000.0;
    m.tokens_per_s = double(gbs) * seq / m.step_time_s;
    m.tflops_per_gpu = plan_flops_per_step(plan, gbs) / m.step_time_s / world / 1e12;
    m.mfu = m.tflops_per_gpu / peak.value();
    m.peak_memory_gib = memory_until(job, flat[i].launch, it.iteration);
    if (it.tflops_per_gpu && std::isfinite(*it.tflops_per_gpu) && *it.tflops_per_gpu > 0)
      m.reported_tflops_per_gpu = it.tflops_per_gpu;
    if (it.tokens_per_s_per_gpu && std::isfinite(*it.tokens_per_s_per_gpu))
      m.reported_tokens_per_s_per_gpu = it.tokens_per_s_per_gpu;
    m.warmup = wf.warmup[i];
    int64_t covered = std::max<int64_t>(1, it.iteration - wf.first[i] + 1);
    m.skipped = it.skipped_iterations >= covered || it.nan_iterations > 0 || (it.loss && !std::isfinite(*it.loss));
    if (m.warmup)
      ++res.warmup_excluded;
    else if (m.skipped)
      ++res.skipped_excluded;
    run.steps.push_back(m);
  }
  if (res.skipped_excluded > 0)
    run.warnings.push_back(std::to_string(res.skipped_excluded) +
                           " logged step(s) left out of the medians: every "
                           "iteration of their interval was skipped (fp16 loss-scale overflow) or one was NaN");
  int measured =
      static_cast<int>(std::count_if(run.steps.begin(), run.steps.end(), [](const StepMetric& m) { return m.measured(); }));
  if (measured == 0)
    return Error(res.job + ": all " + std::to_string(run.steps.size()) +
                 " logged iterations fall in the warm-up or "
                 "were skipped (" +
                 warmup_rule_text(opt.warmup_iters) + "); pass a smaller --warmup");
  auto problems = plausibility_problems(run.steps, plan, reported_band(plan, job.framework, full_recompute(job.config)));
  if (!problems.empty() && !opt.allow_mismatch) {
    problems.insert(problems.begin(), res.job + ": the MFU computed with this plan is implausible:");
    problems.push_back("fix the plan file (or pass --allow-mismatch to import anyway, keeping these as warnings)");
    return Error(problems);
  }
  for (auto& p : problems) run.warnings.push_back(p);
  bool any_memory =
      std::any_of(run.steps.begin(), run.steps.end(), [](const StepMetric& m) { return m.peak_memory_gib.has_value(); });
  if (!any_memory) run.warnings.push_back("the log has no memory report; peak memory is unknown");
  return res;
}

}  // namespace mplan::runs
