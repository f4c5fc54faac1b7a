// `mplan profile --backend cuda` in builds without the CUDA toolkit.
#include "profiles/cuda_profiler.h"

namespace mplan::profiles {

bool cuda_backend_built() { return false; }

Expected<CudaProfileResult> run_cuda_profile(const CudaProfileOptions&) {
  return Error(
      "this mplan was built without CUDA (MPLAN_ENABLE_CUDA=OFF or no CUDA toolkit found): "
      "rebuild with the CUDA toolkit to profile GPUs, or use --backend cpu");
}

}  // namespace mplan::profiles
