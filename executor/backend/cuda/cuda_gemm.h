// cuBLASLt GEMMs of the CUDA backend, row-major as the Backend interface states them, mapped to
// cuBLASLt's column-major form (a row-major X (r, c) is the column-major X^T (c, r)). Two
// precisions: fp32 (fp32 operands, CUBLAS_COMPUTE_32F without TF32: the exact-arithmetic mode the
// equivalence tests use) and bf16 (bf16 operands, fp32 accumulation, fp32 output: mixed precision).
// Plans (layouts + heuristic algorithm) are cached by shape, transposes and the operands' true
// alignment. `gemm_mapping` is the pure row-major -> column-major translation (unit-tested).
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

namespace mplan::exec::gpu {

enum class GemmPrecision { fp32, bf16 };

// Column-major call C (m, n) = op(A) op(B) (+ C): what cuBLASLt receives.
struct ColMajorGemm {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int a_operand = 0, b_operand = 0;  // which row-major operand (0 = first, 1 = second) is A / B
};
enum class RowMajorGemm {
  forward,          // out (M, N) = inp (M, K) @ W (N, K)^T          operands (inp, W)
  backward_input,   // dinp (M, K) = dout (M, N) @ W (N, K)          operands (dout, W)
  backward_weight,  // dW (N, K) += dout (M, N)^T @ inp (M, K)       operands (dout, inp)
};
ColMajorGemm gemm_mapping(RowMajorGemm kind, int64_t M, int64_t K, int64_t N);

class LtGemm {
 public:
  explicit LtGemm(size_t workspace_bytes = size_t(32) << 20);  // owns a cudaMalloc'd workspace
  LtGemm(void* workspace, size_t workspace_bytes);             // uses the caller's (e.g. a pool's)
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // C (fp32) = op(A) op(B) + beta C with A, B in `p` precision (fp32 or bf16 device pointers).
  void run(GemmPrecision p, const ColMajorGemm& g, const void* A, const void* B, float beta, float* C, cudaStream_t s);

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  using Key = std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int>;
  Plan& plan(GemmPrecision p, const ColMajorGemm& g, int align_a, int align_b, int align_c);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  bool owns_workspace_ = true;
  std::map<Key, Plan> plans_;
};

}  // namespace mplan::exec::gpu
