// Benchmark (not a test): one-rank training step of the GPT-2 124M shape (B=4, T=64, fp32) on the
// CPU executor — tokens/s, achieved GFLOP/s and its share of the measured single-core GEMM peak,
// and the per-op time split. Usage: bench_gpt2_step [steps=6]; pin it (taskset -c 1) for stable
// numbers. Compare with llm.c's train_gpt2.c built with -Ofast -fopenmp and OMP_NUM_THREADS=1.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "core/counting.h"
#include "core/plan.h"
#include "core/stats.h"
#include "executor/backend/blas_config.h"
#include "executor/train/run.h"
#include "executor/train/trainer.h"

using namespace mplan;

int main(int argc, char** argv) {
  exec::reexec_with_blas_environment(argv);
  const int steps = argc > 1 ? std::atoi(argv[1]) : 6;
  MPI_Init(&argc, &argv);
  // the committed benchmark plan (also what the executor's README trains with `mplan train --plan`)
  auto plan = read_plan_file(std::string(MPLAN_SOURCE_DIR) + "/tests/executor/plans/gpt2_124m_b4_t64.json");
  if (!plan) {
    std::fprintf(stderr, "%s\n", plan.error().message().c_str());
    return 2;
  }
  exec::TrainOptions opt;
  opt.steps = steps;
  auto t = exec::Trainer::create(plan.value(), opt, MPI_COMM_SELF);
  if (!t) {
    std::fprintf(stderr, "%s\n", t.error().message().c_str());
    return 2;
  }
  std::printf("GPT-2 124M shape, B=4 T=64 fp32, 1 rank: %s\n", t.value()->backend().describe().c_str());
  // CPU time of this (single-threaded, pinned) process per step, besides wall time: on a busy machine
  // it shows what the step costs when the core is not shared
  auto cpu_s = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  };
  std::vector<exec::StepMetrics> ms;
  std::vector<double> cpu;
  for (int s = 0; s < steps; ++s) {
    double c0 = cpu_s();
    ms.push_back(t.value()->step());
    cpu.push_back(cpu_s() - c0);
    std::printf("step %d: loss %.4f, %.3f s wall, %.3f s cpu, %.1f tokens/s\n", s + 1, ms.back().loss, ms.back().step_time_s,
                cpu.back(), ms.back().tokens_per_s);
  }
  std::vector<double> cpus(cpu.begin() + 1, cpu.end());
  std::sort(cpus.begin(), cpus.end());
  std::vector<double> times;
  for (size_t i = 1; i < ms.size(); ++i) times.push_back(ms[i].step_time_s);
  std::sort(times.begin(), times.end());
  const double med = mplan::stats::quantile_sorted(times, 0.5), cpu_med = mplan::stats::quantile_sorted(cpus, 0.5);
  const ModelSpec& m = plan.value().model;
  // FLOPs actually executed: 6 x (matmul parameters incl. the tied LM head) x tokens + attention
  ParamCounts pc = count_params(m);
  const double tokens = 4 * 64;
  const double gemm_params = pc.total - pc.embedding + double(m.vocab_size) * m.hidden_size;
  const double executed = 6.0 * gemm_params * tokens + 6.0 * m.num_layers * 4 * 64.0 * 64.0 * m.hidden_size;
  const double megatron = model_flops_per_step(m, 4, 64, AttentionFlops::causal);
  const double peak = exec::measure_gemm_gflops(1024, 5);
  std::printf(
      "\nmedian step %.3f s wall -> %.1f tokens/s; median CPU time %.3f s -> %.1f tokens/s; best wall %.3f s "
      "-> %.1f tokens/s\n",
      med, tokens / med, cpu_med, tokens / cpu_med, times.front(), tokens / times.front());
  std::printf(
      "model FLOPs/step (Megatron, causal) %.1f GFLOP -> %.1f GFLOP/s = %.1f%% of the measured single-core "
      "sgemm peak %.1f GFLOP/s (%s kernels)\n",
      megatron / 1e9, megatron / med / 1e9, 100 * megatron / med / 1e9 / peak, peak, exec::blas_corename().c_str());
  std::printf("executed FLOPs/step (GEMMs + causal attention) %.1f GFLOP -> %.1f GFLOP/s = %.1f%% of peak\n", executed / 1e9,
              executed / med / 1e9, 100 * executed / med / 1e9 / peak);
  auto ops = exec::median_ops(ms);
  std::sort(ops.begin(), ops.end(), [](auto& a, auto& b) { return a.seconds > b.seconds; });
  std::printf("\nper-op time per step (median):\n");
  for (auto& o : ops)
    std::printf("  %-16s %8.4f s  %5.1f%%  %4lld calls\n", o.op.c_str(), o.seconds, 100 * o.seconds / med, (long long)o.calls);
  t.value().reset();
  MPI_Finalize();
  return 0;
}
