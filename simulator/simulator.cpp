// simulate(): plan -> workload -> event-driven pipeline -> StepReport (time breakdown of the critical
// rank, MFU, memory per stage, per-op times, warnings).
#include "simulator/simulator.h"

#include <algorithm>
#include <cmath>

#include "core/counting.h"
#include "core/ops.h"
#include "core/rank_grid.h"
#include "core/units.h"
#include "simulator/bubbles.h"
#include "simulator/critical_path.h"
#include "simulator/memory.h"
#include "simulator/pipeline_sim.h"
#include "simulator/workload.h"

namespace mplan {

namespace {

std::string pct(double f) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f%%", 100 * f);
  return b;
}

void add_warnings(const Plan& plan, const StepReport& r, std::vector<std::string>& w) {
  const ParallelConfig& p = plan.parallel;
  const ClusterSpec& c = plan.cluster;
  RankGrid grid(p);
  if (!r.fits) {
    char b[160];
    std::snprintf(b, sizeof b, "does not fit: peak %.1f GiB on the worst rank exceeds the %.1f GiB of %s", r.peak_memory_gib,
                  r.capacity_gib, c.gpu.name.c_str());
    w.push_back(b);
  }
  if (p.tp > 1 && grid.placement(Dim::tp, c.placement_domain()).domains > 1)
    w.push_back("tp=" + std::to_string(p.tp) + " crosses the NVLink domain of " + std::to_string(c.placement_domain()) +
                " GPUs: tensor-parallel traffic goes over the network");
  if (p.ep > 1 && grid.placement(Dim::ep, c.placement_domain()).domains > 1)
    w.push_back("ep=" + std::to_string(p.ep) + " spans several NVLink domains: expert all-to-all crosses the network");
  for (std::string& b : bubble_warnings(plan, r)) w.push_back(std::move(b));
  double exposed =
      r.time.tp_comm_exposed + r.time.cp_comm_exposed + r.time.ep_comm_exposed + r.time.dp_comm_exposed + r.time.pp_p2p_exposed;
  if (exposed > 0.25 * r.step_time_s) w.push_back("exposed communication is " + pct(exposed / r.step_time_s) + " of the step");
}

// Results are checked before anyone prints them: extreme inputs (a peak of 1e308 TFLOP/s, an
// efficiency far above 1) must be refused, not shown as "tokens/s inf, MFU -nan%" or "MFU 166%".
std::string check_report_finite(const StepReport& r) {
  struct F {
    const char* name;
    double v;
  };
  for (F f : {F{"step time", r.step_time_s}, F{"tokens/s per GPU", r.tokens_per_s_per_gpu},
              F{"model TFLOP/s per GPU", r.model_tflops_per_gpu}, F{"MFU", r.mfu}, F{"peak memory", r.peak_memory_gib},
              F{"pipeline bubble", r.bubble_fraction}})
    if (!std::isfinite(f.v) || f.v < 0)
      return std::string("the prediction's ") + f.name + " is not a finite number; the cluster, calibration or model " +
             "holds a value outside physical limits (check peak_tflops, bandwidths and efficiencies)";
  if (!(r.step_time_s > 0)) return "the predicted step time is 0; the cluster or calibration holds an impossible value";
  if (r.mfu > 1.0 + 1e-9)
    return "the predicted MFU is " + std::to_string(int(std::lround(100 * r.mfu))) + "%, above 100%: a calibration " +
           "efficiency or the cluster's peak is impossible (efficiencies are fractions of the peak, at most 1)";
  return "";
}

}  // namespace

namespace {

// StepReport::critical_path / critical_by_kind from the step's DAG, and the critical trace events.
void fill_critical_path(const StepGraph& g, StepReport& r) {
  CriticalPathResult cp = critical_path(g);
  r.critical_path_s = cp.length_s;
  for (int i : cp.path) {
    const StepEvent& e = g.events[size_t(i)];
    r.critical_path.push_back({event_kind_name(e, g.zero), e.stage, e.microbatch, e.chunk, e.start_s, e.dur_s});
    for (int t = std::max(0, e.trace_first); t < e.trace_end && t < int(r.trace.size()); ++t) {
      TraceEvent& te = r.trace[size_t(t)];
      // the action itself and the exposed part of the collectives inside it
      if (te.phase != 'C' || te.exposed_s > 0 || te.stream == "p2p") te.critical = true;
    }
  }
  r.critical_by_kind = std::move(cp.by_kind);
}

}  // namespace

Expected<StepReport> simulate(const Plan& plan, const CostParams& params, const SimOptions& opt) {
  auto problems = validate_layout(plan.model, plan.cluster, plan.training, plan.parallel);
  if (!problems.empty()) return Error(problems);
  const ParallelConfig& p = plan.parallel;
  Workload w = build_workload(plan, params, opt.cache ? &opt.cache->workload_memo() : nullptr);
  StepReport r;
  StepGraph graph;
  const bool want_path = opt.trace || opt.critical_path;
  PipelineResult pr = simulate_pipeline(w, p, opt.trace ? &r.trace : nullptr, opt.trace ? &r.memory_trace : nullptr,
                                        want_path ? &graph : nullptr, opt.cache);
  if (want_path) fill_critical_path(graph, r);

  r.num_microbatches = w.microbatches;
  r.step_time_s = pr.step_time_s;
  const StageResult& cs = pr.stages[pr.critical_stage];
  r.time.compute = cs.busy.compute;
  r.time.recompute = cs.busy.recompute;
  r.time.tp_comm_exposed = cs.busy.tp;
  r.time.cp_comm_exposed = cs.busy.cp;
  r.time.ep_comm_exposed = cs.busy.ep;
  r.time.dp_comm_exposed = cs.busy.dp + cs.dp_exposed_s;
  r.time.pp_p2p_exposed = cs.idle_p2p_s;
  r.time.offload_exposed = cs.busy.host;
  r.time.bubble = cs.idle_bubble_s;
  r.time.optimizer = cs.optimizer_s;
  r.bubble_fraction = r.step_time_s > 0 ? r.time.bubble / r.step_time_s : 0;

  const TrainingSpec& t = plan.training;
  double gpus = p.world_size;
  double flops = model_flops_per_step(plan.model, t.global_batch_size, t.seq_length, AttentionFlops::causal);
  double flops_full = model_flops_per_step(plan.model, t.global_batch_size, t.seq_length, AttentionFlops::full);
  double peak = plan.cluster.gpu.peak(t.precision).value_or(0) * 1e12;
  r.tokens_per_s_per_gpu = double(t.global_batch_size) * t.seq_length / (r.step_time_s * gpus);
  r.model_tflops_per_gpu = flops / (r.step_time_s * gpus) / 1e12;
  r.mfu = peak > 0 ? flops / (r.step_time_s * gpus * peak) : 0;
  r.mfu_full_attention = peak > 0 ? flops_full / (r.step_time_s * gpus * peak) : 0;
  if (auto it = params.interval_lo_hi.find(plan.model.moe ? "moe" : "dense"); it != params.interval_lo_hi.end()) {
    // ln(measured / predicted) lies in [lo, hi] for 80 % of held-out sources' rows of the family
    const auto [lo, hi] = it->second;
    r.tokens_per_s_per_gpu_interval = {r.tokens_per_s_per_gpu * std::exp(lo), r.tokens_per_s_per_gpu * std::exp(hi)};
    r.step_time_s_interval = {r.step_time_s * std::exp(-hi), r.step_time_s * std::exp(-lo)};
  }

  r.capacity_gib = plan.cluster.gpu.memory_gib;
  for (int s = 0; s < p.pp; ++s) {
    StageReport sr;
    sr.stage = s;
    for (const auto& ch : w.stages[s].chunks) sr.layers += ch.layers;
    sr.memory = stage_memory(plan, w.stages[s], pr.stages[s].peak_act_bytes, params);
    sr.memory_gib = sr.memory.total();
    sr.busy_s = pr.stages[s].busy.total();
    sr.max_microbatches_in_flight = pr.stages[s].max_in_flight;
    if (sr.memory_gib > r.peak_memory_gib) {
      r.peak_memory_gib = sr.memory_gib;
      r.memory = sr.memory;
    }
    r.per_stage.push_back(sr);
  }
  r.fits = r.peak_memory_gib <= r.capacity_gib;
  split_bubbles(w, pr, r);

  // per-op times on the critical stage's rank, per step (a dozen names: a flat list, one per name;
  // the sort below orders by (time, name), so the order they are found in does not matter)
  std::vector<OpTime>& ops = r.ops;
  auto op_named = [&ops](const std::string& n) -> OpTime& {
    auto it = std::find_if(ops.begin(), ops.end(), [&n](const OpTime& o) { return o.name == n; });
    if (it != ops.end()) return *it;
    ops.push_back({n, 0, 0});
    return ops.back();
  };
  const StageWork& st = w.stages[pr.critical_stage];
  for (const auto& ch : st.chunks)
    for (const auto& o : ch.ops) {
      OpTime& x = op_named(o.name);
      x.time_s += o.time_s * w.microbatches;
      x.calls += int64_t(o.calls) * w.microbatches;
    }
  auto add = [&](OpId id, double tsec, int64_t calls) {  // the step's ops outside the layers, by their vocabulary names
    if (tsec <= 0) return;
    const std::string n(op_name(id));
    op_named(n) = {n, tsec, calls};
  };
  add(p.zero == 0 ? OpId::dp_allreduce : OpId::dp_reduce_scatter, st.dp_grad_s, st.dp_buckets);
  add(OpId::dp_allgather, st.dp_param_gather_s, st.dp_buckets);
  add(OpId::adamw, st.optimizer_s, 1);
  if (p.pp > 1) add(OpId::pp_send_recv, w.p2p_s * 2 * w.microbatches * p.vpp, 2 * int64_t(w.microbatches) * p.vpp);
  std::sort(r.ops.begin(), r.ops.end(),
            [](const OpTime& a, const OpTime& b) { return a.time_s != b.time_s ? a.time_s > b.time_s : a.name < b.name; });
  r.warnings = w.warnings;
  add_warnings(plan, r, r.warnings);
  if (auto bad = check_report_finite(r); !bad.empty()) return Error(bad);
  return r;
}

}  // namespace mplan
