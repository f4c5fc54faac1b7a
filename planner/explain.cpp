// Explanations: why a plan wins or loses. explain_plan() simulates the plan and the usual
// alternatives one change away (tp, pp, vpp, cp, ep, micro-batch x2 and /2, other ZeRO levels,
// recomputation modes, schedule, TP-comm overlap) and names, for each, the part of the step time or
// memory that moved most ("does not fit: +7.3 GiB activations on stage 0", "tp=16 crosses the
// NVLink domain: +18% exposed TP comm", "bubble 23% with 8 micro-batches"). explain_search() puts the
// winner's breakdown next to the runners-up first.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/rank_grid.h"
#include "planner/layout.h"
#include "planner/planner.h"
#include "simulator/critical_path.h"

namespace mplan {

using planner::from_parallel;
using planner::short_name;

namespace {

std::string f1(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}
std::string f3(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}
std::string pct(double frac) {
  char b[32];
  std::snprintf(b, sizeof b, std::abs(frac) < 0.001 && frac != 0 ? "%.3f%%" : "%.1f%%", 100 * frac);
  return b;
}
std::string signed_pct(double frac) { return (frac >= 0 ? "+" : "") + pct(frac); }

// Plain text table: first column left-aligned, the rest right-aligned.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], r[i].size());
    }
  std::ostringstream o;
  for (size_t k = 0; k < rows.size(); ++k) {
    for (size_t i = 0; i < rows[k].size(); ++i) {
      std::string c = rows[k][i];
      std::string pad(w[i] - c.size(), ' ');
      o << (i ? "  " : "") << (i == 0 ? c + pad : pad + c);
    }
    o << "\n";
    if (k == 0) {
      for (size_t i = 0; i < w.size(); ++i) o << (i ? "  " : "") << std::string(w[i], '-');
      o << "\n";
    }
  }
  return o.str();
}

struct Part {
  const char* name;
  double TimeBreakdown::*field;
};
const Part kParts[] = {{"compute", &TimeBreakdown::compute},
                       {"recomputation", &TimeBreakdown::recompute},
                       {"exposed TP comm", &TimeBreakdown::tp_comm_exposed},
                       {"exposed CP comm", &TimeBreakdown::cp_comm_exposed},
                       {"exposed EP comm", &TimeBreakdown::ep_comm_exposed},
                       {"exposed DP comm", &TimeBreakdown::dp_comm_exposed},
                       {"exposed pipeline transfers", &TimeBreakdown::pp_p2p_exposed},
                       {"pipeline bubble", &TimeBreakdown::bubble},
                       {"optimizer", &TimeBreakdown::optimizer}};

struct MemPart {
  const char* name;
  double MemoryBreakdown::*field;
};
const MemPart kMem[] = {{"weights", &MemoryBreakdown::weights},
                        {"gradients", &MemoryBreakdown::gradients},
                        {"optimizer states", &MemoryBreakdown::optimizer},
                        {"activations", &MemoryBreakdown::activations},
                        {"communication buffers", &MemoryBreakdown::comm_buffers},
                        {"other", &MemoryBreakdown::other}};

// The worst stage of a report (index into per_stage).
size_t worst_stage(const StepReport& r) {
  size_t w = 0;
  for (size_t i = 1; i < r.per_stage.size(); ++i)
    if (r.per_stage[i].memory_gib > r.per_stage[w].memory_gib) w = i;
  return w;
}

// Why `alt` (plan `ap`) compares as it does with the base report `b` (plan `bp`).
std::string reason(const Plan& bp, const StepReport& b, const Plan& ap, const StepReport& a) {
  if (!a.fits) {
    size_t ws = worst_stage(a);
    const MemoryBreakdown& am = a.per_stage[ws].memory;
    const MemoryBreakdown& bm = b.memory;
    const MemPart* best = &kMem[0];
    for (const MemPart& m : kMem)
      if (am.*(m.field) - bm.*(m.field) > am.*(best->field) - bm.*(best->field)) best = &m;
    double d = am.*(best->field) - bm.*(best->field);
    return "does not fit: " + std::string(d >= 0 ? "+" : "") + f1(d) + " GiB " + best->name + " on stage " + std::to_string(ws) +
           " (" + f1(a.peak_memory_gib) + " of " + f1(a.capacity_gib) + " GiB)";
  }
  double base = b.step_time_s;
  double delta = a.step_time_s / base - 1;
  // the part that moved most in the direction of the change
  const Part* top = &kParts[0];
  double top_d = 0;
  for (const Part& p : kParts) {
    double d = (a.time.*(p.field) - b.time.*(p.field)) * (delta >= 0 ? 1 : -1);
    if (d > top_d) {
      top_d = d;
      top = &p;
    }
  }
  double moved = (a.time.*(top->field) - b.time.*(top->field)) / base;
  std::string what = signed_pct(moved) + " " + top->name;
  const ParallelConfig& q = ap.parallel;
  if (top->field == &TimeBreakdown::bubble) {  // worded by cause (simulator/bubbles.h)
    if (a.bottleneck_stage >= 0 && a.bubble_imbalance_s > a.bubble_fill_drain_s)
      what = "stage imbalance " + pct(a.bubble_imbalance_s / a.step_time_s) + " (stage " + std::to_string(a.bottleneck_stage) +
             " is the bottleneck; " + signed_pct(moved) + " bubble)";
    else
      what = "pipeline fill/drain " + pct(a.bubble_fill_drain_s / a.step_time_s) + " with " + std::to_string(a.num_microbatches) +
             " micro-batches (" + signed_pct(moved) + " bubble)";
  }
  if (top->field == &TimeBreakdown::tp_comm_exposed && q.tp > 1 &&
      RankGrid(q).placement(Dim::tp, ap.cluster.placement_domain()).domains > 1)
    what = "tp=" + std::to_string(q.tp) + " crosses the NVLink domain: " + what;
  if (top->field == &TimeBreakdown::ep_comm_exposed && q.ep > 1 &&
      RankGrid(q).placement(Dim::ep, ap.cluster.placement_domain()).domains > 1)
    what = "ep=" + std::to_string(q.ep) + " spans NVLink domains: " + what;
  (void)bp;
  if (std::abs(delta) < 1e-9) return "same step time";
  return (delta > 0 ? "slower by " : "FASTER by ") + pct(std::abs(delta)) + ": " + what;
}

// One-change-away alternatives of a layout (labels say what changed).
std::vector<std::pair<std::string, ParallelConfig>> alternatives(const Plan& plan) {
  const ParallelConfig& p = plan.parallel;
  const ModelSpec& m = plan.model;
  std::vector<std::pair<std::string, ParallelConfig>> out;
  auto fix_pipeline = [&](ParallelConfig& q) {
    q.schedule = q.vpp > 1 ? Schedule::interleaved : (q.schedule == Schedule::interleaved ? Schedule::one_f_one_b : q.schedule);
    if (q.pp == 1 && q.schedule == Schedule::zero_bubble) q.schedule = Schedule::one_f_one_b;
    q.num_layers_in_first_pipeline_stage = q.num_layers_in_last_pipeline_stage = 0;
    bool even = m.num_layers % q.pp == 0 && (m.num_layers / q.pp) % q.vpp == 0 && q.pp * q.vpp <= m.num_layers;
    q.pipeline_layout.clear();
    if (!even && q.pp > 1) q.pipeline_layout = balanced_pipeline_layout(m, q.pp, q.vpp);
    if (q.recompute_num_layers > 0) {
      int mn = INT32_MAX;
      for (const auto& row : layers_per_stage_chunk(m, q))
        for (int v : row) mn = std::min(mn, v);
      q.recompute_num_layers = std::min(q.recompute_num_layers, std::max(0, mn));
    }
  };
  auto add = [&](const std::string& label, ParallelConfig q) { out.emplace_back(label, std::move(q)); };
  for (int f : {2, -2}) {
    auto scaled = [&](int v) { return f > 0 ? v * 2 : v / 2; };
    if (f < 0 && p.tp == 1) {
    } else {
      ParallelConfig q = p;
      q.tp = scaled(p.tp);
      q.sp = q.tp > 1 && (p.sp || m.moe || p.tp == 1);
      q.tp_comm_overlap = q.sp && p.tp_comm_overlap;
      q.etp = std::min(q.etp, q.tp);
      add("tp=" + std::to_string(q.tp), q);
    }
    if (!(f < 0 && p.pp == 1)) {
      ParallelConfig q = p;
      q.pp = scaled(p.pp);
      if (q.pp == 1) q.vpp = 1;
      fix_pipeline(q);
      add("pp=" + std::to_string(q.pp), q);
    }
    if (p.pp > 1 && !(f < 0 && p.vpp == 1)) {
      ParallelConfig q = p;
      q.vpp = scaled(p.vpp);
      fix_pipeline(q);
      add("vpp=" + std::to_string(q.vpp), q);
    }
    if (!(f < 0 && p.cp == 1)) {
      ParallelConfig q = p;
      q.cp = scaled(p.cp);
      add("cp=" + std::to_string(q.cp), q);
    }
    if (m.moe && !(f < 0 && p.ep == 1)) {
      ParallelConfig q = p;
      q.ep = scaled(p.ep);
      add("ep=" + std::to_string(q.ep), q);
    }
    if (!(f < 0 && p.micro_batch_size == 1)) {
      ParallelConfig q = p;
      q.micro_batch_size = scaled(p.micro_batch_size);
      add("mbs=" + std::to_string(q.micro_batch_size), q);
    }
  }
  for (int z = 0; z <= 3; ++z)
    if (z != p.zero) {
      ParallelConfig q = p;
      q.zero = z;
      add("zero=" + std::to_string(z), q);
    }
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
    if (r != p.recompute || p.recompute_num_layers > 0) {  // (full of every layer when only some are)
      ParallelConfig q = p;
      q.recompute = r;
      q.recompute_num_layers = 0;
      add("recompute=" + to_string(r) + (r == p.recompute ? " (all layers)" : ""), q);
    }
  if (p.pp > 1 && p.vpp == 1) {
    ParallelConfig q = p;
    q.schedule = p.schedule == Schedule::zero_bubble ? Schedule::one_f_one_b : Schedule::zero_bubble;
    add("schedule=" + to_string(q.schedule), q);
  }
  if (p.tp > 1 && p.sp) {
    ParallelConfig q = p;
    q.tp_comm_overlap = !p.tp_comm_overlap;
    add(std::string("tp-comm-overlap ") + (q.tp_comm_overlap ? "on" : "off"), q);
  }
  // only what the plan's framework runs (core/framework.h), as the search
  out.erase(
      std::remove_if(out.begin(), out.end(), [&](const auto& a) { return !framework_refusal(plan.training, a.second).empty(); }),
      out.end());
  return out;
}

std::string breakdown_table(const std::vector<std::pair<std::string, const StepReport*>>& cols) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head = {""};
  for (const auto& c : cols) head.push_back(c.first);
  rows.push_back(head);
  auto row = [&](const std::string& name, auto get) {
    std::vector<std::string> r = {name};
    for (const auto& c : cols) r.push_back(get(*c.second));
    rows.push_back(r);
  };
  row("step time s", [](const StepReport& r) { return f3(r.step_time_s); });
  row("tokens/s/GPU", [](const StepReport& r) { return f1(r.tokens_per_s_per_gpu); });
  row("MFU", [](const StepReport& r) { return pct(r.mfu); });
  row("peak memory GiB", [](const StepReport& r) { return f1(r.peak_memory_gib) + "/" + f1(r.capacity_gib); });
  for (const Part& p : kParts) row(std::string(p.name) + " s", [&](const StepReport& r) { return f3(r.time.*(p.field)); });
  return table(rows);
}

}  // namespace

Expected<std::string> explain_plan(const Plan& plan, const Calibration& cal) {
  CostParams prm = cal.params_for(plan.cluster.gpu);
  auto base = simulate(plan, prm, SimOptions{false, true});
  if (!base) return base.error();
  const StepReport& b = *base;
  std::ostringstream o;
  o << plan.model.name << " on " << plan.parallel.world_size << " x " << plan.cluster.gpu.name << ", global batch "
    << plan.training.global_batch_size << " x seq " << plan.training.seq_length << ", " << to_string(plan.training.precision)
    << "\nlayout: " << short_name(from_parallel(plan.parallel)) << "\n";
  o << "step " << f3(b.step_time_s) << " s";
  if (b.step_time_s_interval.second > 0)
    o << " (80% interval " << f3(b.step_time_s_interval.first) << "-" << f3(b.step_time_s_interval.second) << " s)";
  o << ", " << f1(b.tokens_per_s_per_gpu) << " tokens/s/GPU, MFU " << pct(b.mfu) << ", peak memory " << f1(b.peak_memory_gib)
    << " of " << f1(b.capacity_gib) << " GiB" << (b.fits ? "" : " (DOES NOT FIT)") << "\n";
  std::vector<std::string> where;
  for (const Part& p : kParts)
    if (b.time.*(p.field) > 0.005 * b.step_time_s)
      where.push_back(std::string(p.name) + " " + pct(b.time.*(p.field) / b.step_time_s));
  o << "where the time goes: ";
  for (size_t i = 0; i < where.size(); ++i) o << (i ? ", " : "") << where[i];
  if (!b.critical_by_kind.empty()) o << "\ncritical path (" << b.critical_path.size() << " events): " << critical_path_summary(b);
  o << "\n\nthe usual alternatives (one change each):\n";
  struct Alt {
    std::string label, why;
    double delta;
    bool fits;
  };
  std::vector<Alt> alts;
  std::vector<std::string> invalid;
  for (auto& [label, q] : alternatives(plan)) {
    Plan ap = plan;
    ap.parallel = q;
    auto problems = validate_layout(ap.model, ap.cluster, ap.training, ap.parallel);
    if (!problems.empty()) {
      invalid.push_back(label + ": " + problems.front());
      continue;
    }
    auto r = simulate(ap, prm);
    if (!r) continue;
    alts.push_back({label, reason(plan, b, ap, *r), r->step_time_s / b.step_time_s - 1, r->fits});
  }
  std::stable_sort(alts.begin(), alts.end(), [](const Alt& x, const Alt& y) {
    if (x.fits != y.fits) return x.fits;
    return x.delta < y.delta;
  });
  for (const Alt& a : alts) o << "  " << a.label << ": " << a.why << "\n";
  if (!invalid.empty()) {
    o << "not valid for this job:\n";
    for (const auto& s : invalid) o << "  " << s << "\n";
  }
  if (!b.warnings.empty()) {
    o << "warnings:\n";
    for (const auto& w : b.warnings) o << "  " << w << "\n";
  }
  return o.str();
}

Expected<std::string> explain_search(const SearchResult& result, const Calibration& cal) {
  if (result.top.empty()) {
    std::string s = "no layout fits; the most frequent reasons:\n";
    for (const auto& r : result.top_rejection_reasons) s += "  " + r + "\n";
    return s;
  }
  std::ostringstream o;
  std::vector<std::pair<std::string, const StepReport*>> cols;
  for (size_t i = 0; i < result.top.size() && i < 4; ++i) cols.emplace_back("#" + std::to_string(i + 1), &result.top[i].report);
  o << "the winner next to the runners-up:\n";
  for (size_t i = 0; i < cols.size(); ++i)
    o << "  " << cols[i].first << " " << short_name(from_parallel(result.top[i].plan.parallel)) << "\n";
  o << "\n" << breakdown_table(cols) << "\n";
  const StepReport& w = result.top[0].report;
  for (size_t i = 1; i < cols.size(); ++i) {
    const StepReport& r = result.top[i].report;
    o << "  #" << i + 1 << " is " << reason(result.top[0].plan, w, result.top[i].plan, r) << "\n";
  }
  auto ex = explain_plan(result.top[0].plan, cal);
  if (!ex) return ex.error();
  o << "\nwhy the winner won:\n" << *ex;
  return o.str();
}

}  // namespace mplan
