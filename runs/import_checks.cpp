// Checks shared by the imports: the plan's FLOPs and peak, MFU plausibility (above 100% of the dense
// peak; the framework's own TFLOP/s figure outside the band of FLOP conventions), the warm-up rule
// text, and the conversion of a log's local times to UTC.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/counting.h"
#include "core/stats.h"
#include "runs/import.h"

namespace mplan::runs {

using stats::median;

namespace {

std::string num(double v, int d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", d, v);
  return buf;
}

// Frameworks count attention either causal-halved (Megatron-LM since 2025, mplan) or full (older
// Megatron-LM, Megatron-DeepSpeed, NeMo's formulas); Megatron-DeepSpeed also counts the recomputed
// forward pass with full activation checkpointing (4 instead of 3 passes). 15% either side covers
// the smaller differences between versions (logits, norms, rounding of the printed figure).
constexpr double kBandSlack = 0.15;

}  // namespace

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
         std::to_string(w) +
         " iterations after the job (re)started; warm-up steps are stored but left out of the "
         "run's medians (--warmup N to change)";
}

ReportedBand reported_band(const Plan& plan, const std::string& framework, bool full_recompute) {
  const int64_t gbs = plan.training.global_batch_size, seq = plan.training.seq_length;
  double causal = model_flops_per_step(plan.model, gbs, seq, AttentionFlops::causal);
  double full = model_flops_per_step(plan.model, gbs, seq, AttentionFlops::full);
  ReportedBand b;
  double top = causal > 0 ? full / causal : 1.0;
  b.why = "between mplan's causal (1.00x) and full-attention (" + num(top, 2) + "x) FLOPs";
  if (framework == "Megatron-DeepSpeed" && full_recompute) {
    top *= 4.0 / 3.0;
    b.why += ", x4/3 for Megatron-DeepSpeed's count of the recomputed forward pass";
  }
  b.lo = 1.0 - kBandSlack;
  b.hi = top * (1.0 + kBandSlack);
  b.why += ", +/-" + num(100 * kBandSlack, 0) + "%";
  return b;
}

std::vector<std::string> plausibility_problems(const std::vector<StepMetric>& steps, const Plan& plan, const ReportedBand& band) {
  std::vector<double> mfu, ratio;
  for (const auto& m : steps) {
    if (!m.measured()) continue;
    mfu.push_back(m.mfu);
    if (m.reported_tflops_per_gpu && *m.reported_tflops_per_gpu > 0 && m.tflops_per_gpu > 0)
      ratio.push_back(*m.reported_tflops_per_gpu / m.tflops_per_gpu);
  }
  std::vector<std::string> out;
  const std::string gpu = plan.cluster.gpu.name, prec(to_string(plan.training.precision));
  double peak = plan.cluster.gpu.peak(plan.training.precision).value_or(0);
  if (!mfu.empty() && median(mfu) > 1.0)
    out.push_back("MFU " + num(100 * median(mfu), 1) + "% exceeds 100% of the dense " + prec + " peak of the plan's GPU " + gpu +
                  " (" + num(peak, 1) +
                  " TFLOP/s): the log probably ran on a faster GPU or another precision "
                  "than the plan says, or the plan's model, batch or sequence is larger than the job's");
  if (!ratio.empty()) {
    double r = median(ratio);
    if (r < band.lo || r > band.hi)
      out.push_back("the framework reported " + num(r, 2) +
                    "x the TFLOP/s per GPU mplan computes from the plan "
                    "(expected " +
                    num(band.lo, 2) + "-" + num(band.hi, 2) + "x: " + band.why + "): " +
                    (r > band.hi ? "the plan's model is probably smaller than the job's (layers, hidden, ffn, vocab, "
                                   "experts, top-k) or its world size larger"
                                 : "the plan's model is probably larger than the job's, or its world size smaller"));
  }
  return out;
}

std::string local_time_to_utc(const std::string& local, const std::optional<StatedZone>& stated,
                              const std::optional<TimeZone>& tz, std::vector<std::string>& warnings) {
  if (local.empty()) return "";
  auto wall = parse_wall_clock(local);
  if (!wall) return "";
  if (stated && stated->offset_s) {
    int64_t utc = *wall - *stated->offset_s;
    if (tz && tz->offset_at_utc(utc) != *stated->offset_s)
      warnings.push_back("the log states its time zone (" + stated->zone + ", line " + std::to_string(stated->line) +
                         "); it was used instead of --tz " + tz->name());
    return format_utc_iso(utc);
  }
  if (tz) return format_utc_iso(tz->local_to_utc(*wall));
  if (stated)
    warnings.push_back("the log states the time zone " + stated->zone + " (line " + std::to_string(stated->line) +
                       "), which names several zones; started_at was stored as if the log's times were UTC: pass "
                       "--tz (e.g. --tz Asia/Shanghai or --tz -06:00)");
  else
    warnings.push_back(
        "the log's times carry no time zone: started_at was stored as if they were UTC; pass --tz "
        "ZONE (e.g. --tz Europe/Berlin) when the job ran elsewhere");
  return format_utc_iso(*wall);
}

}  // namespace mplan::runs
