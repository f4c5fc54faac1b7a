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

// MPI started for an equivalence program (run under mpirun): this rank and the world size; `exit` is
// 2 (usage printed by rank 0, MPI finalized) when no layout argument was given.
struct MpiStart {
  int rank = 0, world = 1;
  int exit = 0;
};

inline MpiStart start_mpi(int& argc, char**& argv, const char* usage) {
  MpiStart s;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.world);
  if (argc < 2) {
    if (s.rank == 0) std::fprintf(stderr, "usage: %s %s\n", argv[0], usage);
    MPI_Finalize();
    s.exit = 2;
  }
  return s;
}

}  // namespace mplan::test
