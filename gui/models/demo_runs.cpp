// A synthetic runs database for demonstrations and tests (see demo_runs.h).
#include "gui/models/demo_runs.h"

#include <cmath>
#include <cstdio>

#include "core/presets.h"
#include "runs/runs_db.h"
#include "simulator/cost_params.h"
#include "simulator/simulator.h"

namespace mplan::gui {

namespace {

// Small deterministic noise in [-1, 1].
double noise(unsigned seed) {
  seed = seed * 1103515245u + 12345u;
  seed ^= seed >> 13;
  seed *= 2654435761u;
  return double(seed % 20001u) / 10000.0 - 1.0;
}

struct DemoPlan {
  int tp, pp, mbs;
  Recompute rc;
  double bias;       // measured / predicted
  int dip_run = -1;  // a run 12% slower than usual
  bool latest_regressed = false;
};

}  // namespace

Status writeDemoRuns(const std::string& path) {
  auto db = runs::RunsDb::open(path);
  if (!db) return db.error();
  auto model = model_preset("llama3-8b");
  auto cluster = cluster_preset("dgx-h100");
  if (!model || !cluster) return Error("demo runs: the llama3-8b / dgx-h100 presets are missing");
  const DemoPlan plans[] = {
      {1, 1, 1, Recompute::selective, 0.93, -1, true},
      {2, 1, 1, Recompute::none, 0.96, 4, false},
      {1, 2, 1, Recompute::none, 0.90, -1, false},
  };
  const int runsPerPlan = 9;
  for (int pi = 0; pi < 3; ++pi) {
    const DemoPlan& d = plans[pi];
    Plan plan;
    plan.model = model.value();
    plan.cluster = cluster.value();
    plan.training.global_batch_size = 256;
    plan.training.seq_length = 4096;
    plan.parallel.world_size = 64;
    plan.parallel.tp = d.tp;
    plan.parallel.sp = d.tp > 1;
    plan.parallel.pp = d.pp;
    plan.parallel.micro_batch_size = d.mbs;
    plan.parallel.recompute = d.rc;
    auto rep = simulate(plan, default_cost_params(plan.cluster));
    if (!rep) return Error("demo runs: " + rep.error().message());
    const StepReport& r = rep.value();
    for (int k = 0; k < runsPerPlan; ++k) {
      runs::RunRecord run;
      run.plan = plan_to_json(plan);
      run.source = "csv";
      run.host = "demo";
      run.tags = {"synthetic"};
      run.software = {{"generator", "mplan-gui demo runs"}};
      char date[32];
      std::snprintf(date, sizeof date, "2025-%02d-%02dT%02d:00:00Z", 1 + (k * 7 + pi) / 28, 1 + (k * 7 + pi) % 28, 9 + pi);
      run.started_at = date;
      run.prediction = report_to_json(r);
      double factor = d.bias * (1.0 + 0.006 * noise(unsigned(pi * 100 + k)));
      if (k == d.dip_run) factor *= 0.88;
      if (d.latest_regressed && k == runsPerPlan - 1) factor *= 0.87;
      for (int s = 0; s < 20; ++s) {
        runs::StepMetric m;
        m.step = s + 1;
        m.warmup = s < 2;
        double f = factor * (m.warmup ? 0.8 : 1.0) * (1.0 + 0.004 * noise(unsigned(pi * 10000 + k * 100 + s)));
        m.step_time_s = r.step_time_s / f;
        m.mfu = r.mfu * f;
        m.tflops_per_gpu = r.model_tflops_per_gpu * f;
        m.tokens_per_s = r.tokens_per_s_per_gpu * 64 * f;
        m.loss = 2.2 + 8.0 / (1.0 + k * 20 + s);
        m.peak_memory_gib = r.peak_memory_gib * (1.0 + 0.01 * noise(unsigned(s + 7)));
        run.steps.push_back(m);
      }
      for (size_t oi = 0; oi < r.ops.size(); ++oi) {
        const OpTime& o = r.ops[oi];
        if (o.time_s <= 0) continue;
        // a fixed per-op bias (some ops are mispredicted) plus run-to-run noise
        double bias = 1.0 + 0.25 * noise(unsigned(oi * 31 + 3)) + 0.02 * noise(unsigned(oi * 131 + k));
        run.ops.push_back({o.name, o.time_s * bias / factor, o.time_s, o.calls});
      }
      auto id = db.value()->add_run(run);
      if (!id) return id.error();
    }
  }
  return {};
}

}  // namespace mplan::gui
