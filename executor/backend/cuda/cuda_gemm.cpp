// cuBLASLt GEMMs (see cuda_gemm.h).
#include "executor/backend/cuda/cuda_gemm.h"

#include <string>

#include "executor/backend/cuda/cuda_check.h"
#include "executor/backend/cuda/launch_config.h"

namespace mplan::exec::gpu {

namespace {

void lt_check(cublasStatus_t st, const char* call, int line) {
  if (st != CUBLAS_STATUS_SUCCESS) fatal_error(call, cublasLtGetStatusString(st), __FILE__, line);
}
#define MPLAN_LT(call) lt_check((call), #call, __LINE__)

}  // namespace

ColMajorGemm gemm_mapping(RowMajorGemm kind, int64_t M, int64_t K, int64_t N) {
  ColMajorGemm g;
  switch (kind) {
    case RowMajorGemm::forward:
      // out^T (N, M) = W (N, K) . inp^T (K, M) = op_T(W^T stored (K, N), ld K) . (inp^T stored (K, M), ld K)
      g = {true, false, N, M, K, K, K, N, 1, 0};
      break;
    case RowMajorGemm::backward_input:
      // dinp^T (K, M) = W^T (K, N) . dout^T (N, M): W^T stored (K, N) ld K, dout^T stored (N, M) ld N
      g = {false, false, K, M, N, K, N, K, 1, 0};
      break;
    case RowMajorGemm::backward_weight:
      // dW^T (K, N) = inp^T (K, M) . dout (M, N) = (inp^T stored (K, M), ld K) . op_T(dout^T stored (N, M), ld N)
      g = {false, true, K, N, M, K, N, K, 1, 0};
      break;
  }
  return g;
}

LtGemm::LtGemm(size_t workspace_bytes) : workspace_bytes_(workspace_bytes) {
  MPLAN_LT(cublasLtCreate(&handle_));
  MPLAN_CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
}

LtGemm::LtGemm(void* workspace, size_t workspace_bytes)
    : workspace_(workspace), workspace_bytes_(workspace_bytes), owns_workspace_(false) {
  MPLAN_LT(cublasLtCreate(&handle_));
}

LtGemm::~LtGemm() {
  for (auto& [key, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.desc);
  }
  if (owns_workspace_) cudaFree(workspace_);
  cublasLtDestroy(handle_);
}

LtGemm::Plan& LtGemm::plan(GemmPrecision prec, const ColMajorGemm& g, int align_a, int align_b, int align_c) {
  const Key key{int(prec), g.trans_a, g.trans_b, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, align_a, align_b, align_c};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan p;
  const cudaDataType_t in = prec == GemmPrecision::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  MPLAN_LT(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  MPLAN_LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  MPLAN_LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  // stored shapes (before op): A is (m, k) or, transposed, (k, m); B is (k, n) or (n, k)
  const uint64_t ar = uint64_t(g.trans_a ? g.k : g.m), ac = uint64_t(g.trans_a ? g.m : g.k);
  const uint64_t br = uint64_t(g.trans_b ? g.n : g.k), bc = uint64_t(g.trans_b ? g.k : g.n);
  MPLAN_LT(cublasLtMatrixLayoutCreate(&p.a, in, ar, ac, g.lda));
  MPLAN_LT(cublasLtMatrixLayoutCreate(&p.b, in, br, bc, g.ldb));
  MPLAN_LT(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, uint64_t(g.m), uint64_t(g.n), g.ldc));
  cublasLtMatmulPreference_t pref = nullptr;
  MPLAN_LT(cublasLtMatmulPreferenceCreate(&pref));
  MPLAN_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                                sizeof workspace_bytes_));
  // the heuristic assumes 256-byte aligned operands unless told otherwise
  const uint32_t aa = uint32_t(align_a), ab = uint32_t(align_b), acc = uint32_t(align_c);
  MPLAN_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa));
  MPLAN_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof ab));
  MPLAN_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &acc, sizeof acc));
  MPLAN_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &acc, sizeof acc));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &heur, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
    const std::string what = "cublasLtMatmulAlgoGetHeuristic(m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) +
                             " k=" + std::to_string(g.k) + (prec == GemmPrecision::bf16 ? " bf16" : " fp32") + ")";
    fatal_error(what.c_str(), st != CUBLAS_STATUS_SUCCESS ? cublasLtGetStatusString(st) : "no algorithm", __FILE__, __LINE__);
  }
  p.algo = heur.algo;
  return plans_.emplace(key, p).first->second;
}

void LtGemm::run(GemmPrecision prec, const ColMajorGemm& g, const void* A, const void* B, float beta, float* C, cudaStream_t s) {
  if (g.m == 0 || g.n == 0) return;
  Plan& p = plan(prec, g, pointer_alignment(A), pointer_alignment(B), pointer_alignment(C));
  const float alpha = 1.0f;
  MPLAN_LT(
      cublasLtMatmul(handle_, p.desc, &alpha, A, p.a, B, p.b, &beta, C, p.c, C, p.c, &p.algo, workspace_, workspace_bytes_, s));
}

}  // namespace mplan::exec::gpu
