// Backend selection (see backend_factory.h).
#include "executor/backend/backend_factory.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "executor/backend/blas_config.h"
#include "executor/backend/cpu/cpu_backend.h"
#if defined(MPLAN_HAVE_CUDA_BACKEND)
#include <cuda_runtime.h>

#include "executor/backend/cuda/cuda_backend.h"
#include "executor/comm/nccl/nccl_groups.h"
#if defined(MPLAN_HAVE_CUPTI_OP_TIMER)
#include "executor/backend/cuda/cupti_op_timer.h"
#endif
#endif

namespace mplan::exec {

#if defined(MPLAN_HAVE_CUDA_BACKEND)
bool cuda_backend_built() { return true; }
int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}
#else
bool cuda_backend_built() { return false; }
int cuda_device_count() { return 0; }
#endif

namespace {

#if defined(MPLAN_HAVE_CUDA_BACKEND)
Expected<BackendSetup> make_cuda(const Plan& plan, MPI_Comm base, int64_t predicted_peak_bytes) {
  char host[256] = "this machine";
  gethostname(host, sizeof(host) - 1);
  MPI_Comm local;
  MPI_Comm_split_type(base, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  const int devices = cuda_device_count();
  // every rank must agree on refusing, or the others would hang in the next collective
  int bad = devices == 0 ? 1 : local_size > devices ? 2 : 0, worst = 0;
  MPI_Allreduce(&bad, &worst, 1, MPI_INT, MPI_MAX, base);
  if (worst == 1)
    return Error("--backend cuda: no CUDA device is visible on " + std::string(devices == 0 ? host : "a node") +
                 "; train with --backend cpu");
  if (worst == 2)
    return Error("--backend cuda: " + std::to_string(local_size) + " ranks share a node with " + std::to_string(devices) +
                 " GPUs; the CUDA executor runs one rank per GPU");
  CudaBackendOptions o;
  o.device = local_rank;
  o.predicted_peak_bytes = predicted_peak_bytes;
  o.gemm = plan.training.precision == Precision::fp32 || plan.training.precision == Precision::tf32 ? gpu::GemmPrecision::fp32
                                                                                                    : gpu::GemmPrecision::bf16;
  gpu::AttentionRequest request = gpu::AttentionRequest::automatic;
  std::string attn_error;
  if (!gpu::attention_request_from_env(&request, &attn_error)) return Error(attn_error);
  if (request != gpu::AttentionRequest::simt) {  // decided (and refused) before training
    gpu::sdpa::Shape shape;
    shape.B = shape.Tq = shape.Tk = 1;
    shape.Hq = plan.model.num_attention_heads;
    shape.Hkv = plan.model.num_query_groups > 0 ? plan.model.num_query_groups : plan.model.num_attention_heads;
    shape.D = shape.Dv = plan.model.head_dim();
    const gpu::AttentionDecision d = gpu::decide_attention_on(local_rank, request, o.gemm == gpu::GemmPrecision::bf16, shape);
    if (!d.error.empty()) return Error(d.error);
    o.cudnn_attention = d.cudnn;
    o.attention_note = d.note;
  }
  BackendSetup s;
  s.backend = std::make_unique<CudaBackend>(o);
#if defined(MPLAN_HAVE_CUPTI_OP_TIMER)
  const char* cupti = std::getenv("MPLAN_CUPTI");
  if (!cupti || std::strcmp(cupti, "0") != 0) s.tagger = std::make_unique<gpu::CuptiOpTagger>();
#endif
  return s;
}
#endif

}  // namespace

Expected<BackendSetup> make_backend(const std::string& name, const Plan& plan, MPI_Comm base, int64_t predicted_peak_bytes) {
  (void)plan, (void)base, (void)predicted_peak_bytes;
  if (name == "cpu") {
    BackendSetup s;
    s.backend = std::make_unique<CpuBackend>();
    return s;
  }
  if (name == "cuda") {
#if defined(MPLAN_HAVE_CUDA_BACKEND)
    return make_cuda(plan, base, predicted_peak_bytes);
#else
    return Error(
        "--backend cuda: this mplan was built without CUDA (configure where nvcc exists, "
        "MPLAN_ENABLE_CUDA=AUTO or ON); train with --backend cpu");
#endif
  }
  return Error("unknown backend '" + name + "'; use cpu or cuda");
}

ProcessGroups make_backend_groups(Backend& be, MPI_Comm base, const ParallelConfig& p) {
#if defined(MPLAN_HAVE_CUDA_BACKEND)
  if (auto* cuda = dynamic_cast<CudaBackend*>(&be)) return make_nccl_process_groups(base, p, cuda->stream());
#endif
  (void)be;
  return make_process_groups(base, p);
}

double backend_peak_gflops(Backend& be) {
#if defined(MPLAN_HAVE_CUDA_BACKEND)
  if (auto* cuda = dynamic_cast<CudaBackend*>(&be)) return cuda->measure_gemm_gflops();
#endif
  (void)be;
  return measure_gemm_gflops(1024, 3);
}

}  // namespace mplan::exec
