// Parallel equivalence on GPUs (run under mpirun, one rank per GPU): a layout trained with the CUDA
// backend and NCCL must reproduce the single-GPU run of the same plan — losses of 5 steps and the
// final weights, with the CPU suite's limits in fp32 (1e-5 / 1e-4) and looser ones for bf16 GEMMs.
//   test_gpu_equivalence --need-gpus N     exit 0 when N devices are visible, else 77 (no MPI)
//   mpirun -np W test_gpu_equivalence LAYOUT        fp32 (the plans' precision)
//   mpirun -np W test_gpu_equivalence bf16@LAYOUT   bf16 GEMMs
//   mpirun -np 1 test_gpu_equivalence cpu_vs_cuda   one GPU against the CPU backend, every tiny model
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "equivalence_train.h"
#include "executor/backend/backend_factory.h"
#include "executor/train/trainer.h"
#include "test_plans.h"

using namespace mplan;

namespace {

using Result = test::TrainResult;

// Prints the comparison; returns true when within the limits.
bool compare(const std::string& title, const Result& ref, const Result& got, double loss_limit, double weight_limit) {
  std::printf("%s\n step  reference        result           rel.err\n", title.c_str());
  double worst_loss = 0, worst_w = 0;
  std::string worst_name;
  bool ok = true;
  for (size_t s = 0; s < ref.losses.size(); ++s) {
    const double rel = std::fabs(got.losses[s] - ref.losses[s]) / std::fabs(ref.losses[s]);
    worst_loss = std::max(worst_loss, rel);
    std::printf(" %4zu  %.9f  %.9f  %.2e\n", s + 1, ref.losses[s], got.losses[s], rel);
  }
  for (const auto& [n, w] : ref.weights) {
    auto it = got.weights.find(n);
    if (it == got.weights.end() || it->second.size() != w.size()) {
      std::printf(" missing or misshaped tensor: %s\n", n.c_str());
      ok = false;
      continue;
    }
    double num = 0, den = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      const double d = double(it->second[i]) - double(w[i]);
      num += d * d;
      den += double(w[i]) * w[i];
    }
    // key biases of learned-position models have a zero gradient direction (see the CPU suite)
    if (n.size() > 8 && n.compare(n.size() - 8, 8, ".attn.bk") == 0) continue;
    const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (rel > worst_w) worst_w = rel, worst_name = n;
  }
  std::printf(" losses: max rel.err %.2e (limit %.0e); weights: max rel. L2 err %.2e in %s (limit %.0e)\n", worst_loss,
              loss_limit, worst_w, worst_name.c_str(), weight_limit);
  ok = ok && worst_loss <= loss_limit && worst_w <= weight_limit && got.weights.size() == ref.weights.size();
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok;
}

Plan make_plan(const std::string& model, nlohmann::json par, bool bf16) {
  par["micro_batch_size"] = 2;
  nlohmann::json j = test::plan_json(test::tiny_model(model), par);
  if (bf16) j["training"]["precision"] = "bf16";
  auto p = plan_from_json(j);
  if (!p) {
    std::fprintf(stderr, "bad plan: %s\n", p.error().message().c_str());
    std::exit(2);
  }
  return p.value();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--need-gpus") {
    const int need = std::atoi(argv[2]), have = exec::cuda_device_count();
    if (have >= need) return 0;
    std::printf("needs %d CUDA device(s), %d visible: skipped\n", need, have);
    return 77;
  }
  const test::MpiStart mpi = test::start_mpi(argc, argv, "LAYOUT | bf16@LAYOUT | cpu_vs_cuda | --need-gpus N");
  if (mpi.exit != 0) return mpi.exit;
  const int rank = mpi.rank, world = mpi.world;
  const int steps = 5;
  std::string name = argv[1];
  int fail = 0;
  if (name == "cpu_vs_cuda") {
    for (const char* model : {"gpt", "llama", "qwen", "moe", "moeb"}) {
      const Plan plan = make_plan(model, {{"world_size", 1}}, false);
      const Result cpu = test::train_for_equivalence(plan, MPI_COMM_SELF, steps, "cpu");
      const Result gpu = test::train_for_equivalence(plan, MPI_COMM_SELF, steps, "cuda");
      if (rank == 0 && !compare(std::string("tiny-") + model + ": CUDA vs CPU backend", cpu, gpu, 2e-5, 2e-4)) fail = 1;
    }
  } else {
    const bool bf16 = name.rfind("bf16@", 0) == 0;
    if (bf16) name = name.substr(5);
    const std::optional<test::LayoutCase> found = test::find_layout(name);
    if (!found) {
      if (rank == 0) std::fprintf(stderr, "unknown layout '%s'\n", name.c_str());
      MPI_Finalize();
      return 2;
    }
    const test::LayoutCase& lc = *found;
    const Plan plan = make_plan(lc.model, lc.parallel, bf16);
    const Plan ref_plan = make_plan(lc.model, {{"world_size", 1}}, bf16);
    if (plan.parallel.world_size != world) {
      if (rank == 0)
        std::fprintf(stderr, "layout %s needs %d ranks, %d started\n", name.c_str(), plan.parallel.world_size, world);
      MPI_Finalize();
      return 2;
    }
    Result ref;
    if (rank == 0) ref = test::train_for_equivalence(ref_plan, MPI_COMM_SELF, steps, "cuda");
    MPI_Barrier(MPI_COMM_WORLD);
    const Result got = test::train_for_equivalence(plan, MPI_COMM_WORLD, steps, "cuda");
    const std::string title =
        "layout " + name + " (tiny-" + lc.model + ", " + std::to_string(world) + " GPUs, " + (bf16 ? "bf16 GEMMs" : "fp32") + ")";
    if (rank == 0 && !compare(title, ref, got, bf16 ? 2e-3 : 1e-5, bf16 ? 2e-2 : 1e-4)) fail = 1;
  }
  MPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return fail;
}
