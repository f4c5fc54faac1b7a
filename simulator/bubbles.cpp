// The pipeline bubble by cause (see bubbles.h).
#include "simulator/bubbles.h"

#include <algorithm>
#include <cmath>

namespace mplan {

namespace {

std::string pct(double f) { return std::to_string(std::lround(100 * f)) + "%"; }

}  // namespace

void split_bubbles(const Workload& w, const PipelineResult& pr, StepReport& r) {
  const int pp = int(pr.stages.size());
  r.critical_stage = pr.critical_stage;
  double most = 0;
  for (int s = 0; s < pp; ++s) {
    double work = 0;
    for (const ChunkCost& ch : w.stages[size_t(s)].chunks) work += ch.F.total() + ch.B.total() + ch.W.total();
    r.per_stage[size_t(s)].work_per_microbatch_s = work;
    if (work > most) {
      most = work;
      r.bottleneck_stage = pp > 1 ? s : -1;
    }
  }
  for (int s = 0; s < pp; ++s) {
    StageReport& sr = r.per_stage[size_t(s)];
    const StageResult& res = pr.stages[size_t(s)];
    double idle = res.idle_bubble_s;
    sr.idle_imbalance_s = std::clamp(w.microbatches * (most - sr.work_per_microbatch_s), 0.0, idle);
    sr.idle_fill_drain_s = idle - sr.idle_imbalance_s;
    sr.idle_p2p_s = res.idle_p2p_s;
  }
  const StageReport& crit = r.per_stage[size_t(pr.critical_stage)];
  r.bubble_fill_drain_s = crit.idle_fill_drain_s;
  r.bubble_imbalance_s = crit.idle_imbalance_s;
}

std::string stage_contents(const Plan& plan, const StepReport& r, int stage) {
  const int pp = int(r.per_stage.size());
  std::string s = std::to_string(r.per_stage[size_t(stage)].layers) + " layers";
  if (stage == 0) s = "embedding + " + s;
  if (stage == pp - 1) {
    s += plan.model.mtp_num_layers > 0 ? " + MTP + LM head and loss" : " + LM head and loss";
  }
  return s;
}

std::vector<std::string> bubble_warnings(const Plan& plan, const StepReport& r) {
  std::vector<std::string> w;
  const ParallelConfig& p = plan.parallel;
  if (r.step_time_s <= 0 || r.per_stage.empty()) return w;
  // fill/drain of the critical rank (the breakdown's); imbalance: the stage that waits most for the bottleneck
  const double fill = r.bubble_fill_drain_s / r.step_time_s;
  double imb = 0;
  for (const StageReport& sr : r.per_stage) imb = std::max(imb, sr.idle_imbalance_s / r.step_time_s);
  if (fill > 0.15)
    w.push_back("pipeline fill/drain " + pct(fill) + " of the step with " + std::to_string(r.num_microbatches) +
                " micro-batches on pp=" + std::to_string(p.pp) + (p.vpp > 1 ? " vpp=" + std::to_string(p.vpp) : "") +
                ": more micro-batches or interleaving shrink it");
  const int b = r.bottleneck_stage;
  if (imb > 0.05 && b >= 0) {
    const int pp = int(r.per_stage.size());
    double others = 0;
    for (int s = 0; s < pp; ++s)
      if (s != b) others += r.per_stage[size_t(s)].work_per_microbatch_s / (pp - 1);
    double more = others > 0 ? r.per_stage[size_t(b)].work_per_microbatch_s / others - 1 : 0;
    std::string fix = b == pp - 1 ? "fewer layers on the last stage balance it"
                      : b == 0    ? "fewer layers on the first stage balance it"
                                  : "moving layers off stage " + std::to_string(b) + " balances it";
    w.push_back("stage imbalance " + pct(imb) + " of the step: stage " + std::to_string(b) + " (" + stage_contents(plan, r, b) +
                ") is the bottleneck with " + pct(more) +
                " more work per micro-batch than the other stages, which wait for it (up to this share); " + fix);
  }
  return w;
}

}  // namespace mplan
