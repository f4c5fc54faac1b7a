// The training run both equivalence suites compare (test_parallel_equivalence: layouts on the CPU;
// test_gpu_equivalence: the CUDA backend against the CPU): a few steps of a plan from seed 7, the
// loss of each step and the full weights gathered at the end. A failed start aborts the MPI job.
#pragma once
#include <mpi.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "executor/train/trainer.h"

namespace mplan::test {

struct TrainResult {
  std::vector<double> losses;
  std::map<std::string, std::vector<float>> weights;
};

inline TrainResult train_for_equivalence(const Plan& plan, MPI_Comm comm, int steps, const std::string& backend = "cpu") {
  exec::TrainOptions opt;
  opt.backend = backend;
  opt.steps = steps;
  opt.seed = 7;
  opt.lr = 3e-3f;
  opt.peak_gflops = 1;  // skip the GEMM measurement
  auto t = exec::Trainer::create(plan, opt, comm);
  if (!t) {
    std::fprintf(stderr, "create failed: %s\n", t.error().message().c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  TrainResult r;
  for (int s = 0; s < steps; ++s) r.losses.push_back(t.value()->step().loss);
  r.weights = t.value()->gather_full(false);
  return r;
}

}  // namespace mplan::test
