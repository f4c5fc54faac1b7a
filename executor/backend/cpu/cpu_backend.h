// The CPU backend: fp32 kernels written llm.c style (plain loops, shapes in comments) with GEMMs
// through OpenBLAS's cblas_sgemm. Single-threaded per rank: parallelism comes from MPI ranks.
#pragma once
#include "executor/backend/backend.h"

namespace mplan::exec {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string describe() const override;

  // Backend's kernels (zero ... adamw), declared once for every backend
#include "executor/backend/backend_kernels.inc"
};

}  // namespace mplan::exec
