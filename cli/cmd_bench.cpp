// `mplan bench`: speed benchmark of the simulator (and later the planner): median wall time of one
// full simulation of Llama-3.1-405B on 16,384 H100 (tp 8, pp 16, vpp 8, gbs 2048, seq 8192, mbs 1).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <vector>

#include "cli/commands.h"
#include "cli/resolve.h"
#include "cli/table.h"
#include "core/stats.h"
#include "simulator/simulator.h"

namespace mplan::cli {

namespace {

struct BenchOptions {
  int repeat = 200;
};

Plan bench_plan() {
  Plan p;
  p.model = require_model("llama3.1-405b");
  p.cluster = require_cluster("dgx-h100");
  p.training = {2048, 8192, Precision::bf16};
  p.parallel.world_size = 16384;
  p.parallel.tp = 8;
  p.parallel.sp = true;
  p.parallel.pp = 16;
  p.parallel.vpp = 8;
  p.parallel.schedule = Schedule::interleaved;
  p.parallel.micro_batch_size = 1;
  // 126 layers over 128 chunks: the embedding and the loss take one chunk slot each (Megatron's
  // --account-for-embedding/loss-in-pipeline-split)
  p.parallel.pipeline_layout = balanced_pipeline_layout(p.model, 16, 8);
  return p;
}

// Median, p10 and p90 (µs) of `repeat` simulations of `plan`; `cache` shared by them when non-null.
std::vector<double> time_simulations(const Plan& plan, const CostParams& params, int repeat, SimCache* cache, double& sink) {
  std::vector<double> us;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = simulate(plan, params, SimOptions{false, false, cache});
    auto t1 = std::chrono::steady_clock::now();
    if (!r) throw InputError{r.error().message()};
    sink += r->step_time_s;
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  return {mplan::stats::quantile_sorted(us, 0.5), mplan::stats::quantile_sorted(us, 0.1), mplan::stats::quantile_sorted(us, 0.9)};
}

int run_bench(const BenchOptions& o) {
  Plan plan = bench_plan();
  CostParams params = default_cost_params(plan.cluster);
  double sink = 0;
  TextTable t({"benchmark", "median us", "p10 us", "p90 us", "runs"});
  auto row = [&](const std::string& name, const std::vector<double>& q) {
    t.add_row({name, fmt(q[0], 1), fmt(q[1], 1), fmt(q[2], 1), std::to_string(o.repeat)});
  };
  row("simulate llama3.1-405b, 16384 x H100, tp8 pp16 vpp8", time_simulations(plan, params, o.repeat, nullptr, sink));
  // as the planner simulates: the schedule tables, op-list costs and buffers of earlier simulations
  // of the job reused (SimCache; the same numbers)
  SimCache cache;
  row("  same, sharing a SimCache (as in a search)", time_simulations(plan, params, o.repeat, &cache, sink));
  std::cout << t.render() << "(predicted step time " << fmt(sink / (2 * o.repeat), 3)
            << " s; target: median <= 100 us on one pinned core, issue 32)\n";
  return kExitOk;
}

}  // namespace

void add_bench_command(CLI::App& app, Runner& run) {
  auto o = std::make_shared<BenchOptions>();
  auto* sub = app.add_subcommand("bench", "Speed benchmarks of the simulator");
  sub->add_option("--repeat", o->repeat, "repetitions")->check(int_range(1, 1000000));
  sub->callback([&run, o] { run = [o] { return run_bench(*o); }; });
}

}  // namespace mplan::cli
