// bench_planner: speed benchmark of the search (not a test; run by hand, see docs/planner.md).
//   bench_planner [--threads N] [--repeat N] [--case 405b|dsv3|530b|sweep|all]
// Case 405b: Llama-3.1-405B on 16,384 H100 (dgx-h100), gbs 2048, seq 8192, bf16, everything open.
// Case dsv3: DeepSeek-V3 on 2,048 H100, gbs 8192, seq 4096, fp8, with expert parallelism.
// Case 530b: Megatron-Turing NLG 530B (data/models/mt-nlg-530b.json) on 5,120 A100-80GB, gbs 2520,
//   seq 2048, fp16: Calculon's example search (267 s on the 2-core development machine).
// Case sweep: the 405B job over 8 GPU counts, 256..32768 (search_scaling, mplan search --gpus 256..32768).
// Targets (2-core development machine, median wall): 405b and dsv3 <= 0.3 s, 530b <= 26.7 ms (10,000x
// Calculon), sweep <= 2 s. Prints the --stats counts.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "core/presets.h"
#include "core/stats.h"
#include "planner/planner.h"
#include "planner/scaling.h"

using namespace mplan;

namespace {

Plan job(const char* model, int gpus, int64_t gbs, int64_t seq, Precision prec, const char* cluster = "dgx-h100") {
  Plan p;
  p.model = model_preset(model).value();
  p.cluster = cluster_preset(cluster).value();
  p.training.global_batch_size = gbs;
  p.training.seq_length = seq;
  p.training.precision = prec;
  p.parallel.world_size = gpus;
  return p;
}

void run(const char* name, const Plan& p, int threads, int repeat) {
  SearchOptions o;
  o.threads = threads;
  o.top_k = 10;
  std::vector<double> walls, cpus;
  SearchResult last;
  for (int r = 0; r < repeat; ++r) {
    std::clock_t c0 = std::clock();
    auto res = search(p, shipped_calibration(), o);
    cpus.push_back(double(std::clock() - c0) / CLOCKS_PER_SEC);
    if (!res) {
      std::printf("%s: error: %s\n", name, res.error().message().c_str());
      return;
    }
    walls.push_back(res->stats.wall_s);
    last = res.value();
  }
  std::sort(walls.begin(), walls.end());
  std::sort(cpus.begin(), cpus.end());
  const SearchStats& s = last.stats;
  std::printf("%s (threads %d): median wall %.3f s (min %.3f, max %.3f over %d runs); median CPU time %.3f s\n", name, threads,
              mplan::stats::quantile_sorted(walls, 0.5), walls.front(), walls.back(), repeat,
              mplan::stats::quantile_sorted(cpus, 0.5));
  std::printf(
      "  enumerated %lld, rejected %lld, pruned by memory %lld, pruned by bound %lld, simulated %lld (fit %lld), "
      "structures %lld, probes %lld\n",
      (long long)s.enumerated, (long long)s.rejected, (long long)s.pruned_memory, (long long)s.pruned_by_bound,
      (long long)s.simulated, (long long)s.fits, (long long)s.structures, (long long)s.probes);
  for (const auto& [rule, n] : s.rejected_by_rule) std::printf("    rejected: %-75s %lld\n", rule.c_str(), (long long)n);
  if (!last.top.empty()) {
    const auto& b = last.top.front();
    const auto& q = b.plan.parallel;
    std::printf(
        "  best: tp %d%s pp %d vpp %d cp %d ep %d etp %d dp %d zero %d mbs %d recompute %s(%d) %s: step %.3f s, "
        "MFU %.1f%%, %.1f GiB\n",
        q.tp, q.sp ? " sp" : "", q.pp, q.vpp, q.cp, q.ep, q.etp, q.dp(), q.zero, q.micro_batch_size,
        to_string(q.recompute).c_str(), q.recompute_num_layers, to_string(q.schedule).c_str(), b.report.step_time_s,
        100 * b.report.mfu, b.report.peak_memory_gib);
  }
}

// The 405B job over 8 GPU counts: median wall of the whole sweep.
void run_sweep(int threads, int repeat) {
  SearchOptions o;
  o.threads = threads;
  o.top_k = 10;
  const std::vector<int> counts = {256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
  Plan p = job("llama3.1-405b", 256, 2048, 8192, Precision::bf16);
  std::vector<double> walls;
  std::vector<ScalePoint> last;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    auto res = search_scaling(p, counts, shipped_calibration(), o);
    walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!res) {
      std::printf("sweep: error: %s\n", res.error().message().c_str());
      return;
    }
    last = std::move(res).value();
  }
  std::sort(walls.begin(), walls.end());
  std::printf(
      "llama3.1-405b sweep 256..32768 x H100 (8 counts, threads %d): median wall %.3f s (min %.3f, max %.3f over %d runs)\n",
      threads, mplan::stats::quantile_sorted(walls, 0.5), walls.front(), walls.back(), repeat);
  for (const ScalePoint& pt : last)
    std::printf("  %6d GPUs: %.3f s wall, simulated %lld, best step %.3f s\n", pt.gpus, pt.result.stats.wall_s,
                (long long)pt.result.stats.simulated, pt.result.top.empty() ? 0.0 : pt.result.top.front().report.step_time_s);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeat = 3;
  std::string which = "all";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeat"))
      repeat = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--case"))
      which = argv[i + 1];
  }
  if (which == "all" || which == "405b")
    run("llama3.1-405b, 16384 x H100, gbs 2048, seq 8192, bf16", job("llama3.1-405b", 16384, 2048, 8192, Precision::bf16),
        threads, repeat);
  if (which == "all" || which == "dsv3")
    run("deepseek-v3, 2048 x H100, gbs 8192, seq 4096, fp8", job("deepseek-v3", 2048, 8192, 4096, Precision::fp8), threads,
        repeat);
  if (which == "all" || which == "530b") {
    auto m = resolve_model(std::string(MPLAN_SOURCE_DIR) + "/data/models/mt-nlg-530b.json");
    if (!m) {
      std::printf("530b: %s\n", m.error().message().c_str());
      return 1;
    }
    Plan p = job("gpt3-175b", 5120, 2520, 2048, Precision::fp16, "dgx-a100-80g");
    p.model = *m;
    run("mt-nlg-530b, 5120 x A100-80GB, gbs 2520, seq 2048, fp16", p, threads, repeat);
  }
  if (which == "all" || which == "sweep") run_sweep(threads, repeat);
  return 0;
}
