// CudaBackend: memory, staging, GEMMs and the op wrappers around the kernels (see cuda_backend.h).
#include "executor/backend/cuda/cuda_backend.h"

#include <cublasLt.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>

#include "executor/backend/cuda/cuda_check.h"
#include "executor/backend/cuda/cuda_kernels.h"

namespace mplan::exec {

using namespace gpu;

CudaBackend::CudaBackend(const CudaBackendOptions& o) : opt_(o) {
  MPLAN_CUDA_CHECK(cudaSetDevice(opt_.device));
  MPLAN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  cudaDeviceProp prop{};
  MPLAN_CUDA_CHECK(cudaGetDeviceProperties(&prop, opt_.device));
  device_name_ = prop.name;
  sm_major_ = prop.major, sm_minor_ = prop.minor, sm_count_ = prop.multiProcessorCount;
  device_bytes_ = prop.totalGlobalMem;
  int optin = 0;
  MPLAN_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, opt_.device));
  // dynamic shared memory left to the attention kernels after their static arrays
  max_smem_ = attention_set_smem_limit(optin);
  if (max_smem_ <= 0)
    fatal_error("attention_set_smem_limit", "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) failed", __FILE__,
                __LINE__);
  const int64_t predicted = opt_.predicted_peak_bytes;
  pool_ = std::make_shared<DevicePool>(make_cuda_device_allocator(opt_.device), [predicted](const OutOfMemory& o) {
    out_of_memory_exit(out_of_memory_message(o, predicted));
  });
  lt_workspace_ = pool_->allocate(int64_t(kLtWorkspaceBytes));
  lt_ = std::make_unique<LtGemm>(lt_workspace_, kLtWorkspaceBytes);
  MPLAN_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_result_), sizeof(double)));
  if (opt_.cudnn_attention) cudnn_ = std::make_unique<CudnnAttention>(stream_, sm_major_ * 10 + sm_minor_, pool_);
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_);
  cudnn_.reset();
  for (auto& [p, w] : working_) pool_->release(w.copy);
  for (Scratch* s :
       {&reduce_, &column_, &bf16_[0], &bf16_[1], &padded_out_, &padded_w_, &stage_[0], &stage_[1], &stage_[2], &stage_[3]})
    pool_->release(s->p);
  cudaFreeHost(host_result_);
  lt_.reset();
  pool_->release(lt_workspace_);
  cudaStreamDestroy(stream_);
}

std::string CudaBackend::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "cuda %s, %s (sm_%d%d, %d SMs, %.0f GiB), cuBLASLt %zu, attention %s",
                opt_.gemm == GemmPrecision::bf16 ? "bf16 GEMMs (fp32 accumulate, fp32 master weights)" : "fp32",
                device_name_.c_str(), sm_major_, sm_minor_, sm_count_, double(device_bytes_) / double(1 << 30),
                cublasLtGetVersion(), opt_.cudnn_attention ? "cuDNN fused (bf16)" : "fp32 flash kernels");
  return opt_.attention_note.empty() ? std::string(buf) : std::string(buf) + " (not cuDNN: " + opt_.attention_note + ")";
}

Tensor CudaBackend::alloc(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const int64_t counted = n * int64_t(sizeof(float));
  float* p = static_cast<float*>(pool_->allocate(std::max<int64_t>(counted, 4)));
  if (n > 0) MPLAN_CUDA_CHECK(cudaMemsetAsync(p, 0, size_t(counted), stream_));  // stream-ordered, no sync
  MemoryTracker* tracker = &mem_;
  tracker->add(counted);
  std::shared_ptr<DevicePool> pool = pool_;
  return Tensor::adopt(std::shared_ptr<float>(p,
                                              [pool, tracker, counted](float* q) {
                                                tracker->sub(counted);
                                                pool->release(q);
                                              }),
                       std::move(shape));
}

void CudaBackend::synchronize() { MPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

int64_t CudaBackend::peak_device_bytes() const { return pool_->peak_allocated_bytes(); }

void CudaBackend::upload(float* dst, const float* host, int64_t n) {
  if (n <= 0) return;
  // from pageable memory the runtime stages the source before returning: `host` may go at once
  MPLAN_CUDA_CHECK(cudaMemcpyAsync(dst, host, size_t(n) * sizeof(float), cudaMemcpyHostToDevice, stream_));
  done();
}

void CudaBackend::download(float* host, const float* src, int64_t n) {
  if (n <= 0) return;
  MPLAN_CUDA_CHECK(cudaMemcpyAsync(host, src, size_t(n) * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  MPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::init_param(float* p, const int64_t* global_rows, const InitArgs& a) {
  if (a.rows <= 0 || a.cols <= 0) return;
  void* d = scratch(stage_[0], size_t(a.rows) * sizeof(int64_t));
  MPLAN_CUDA_CHECK(cudaMemcpyAsync(d, global_rows, size_t(a.rows) * sizeof(int64_t), cudaMemcpyHostToDevice, stream_));
  gpu::init_param(p, static_cast<const int64_t*>(d), a.rows, a.cols, a.full_cols, a.col_begin, a.seed, a.name_key, a.normal,
                  a.stddev, a.constant, stream_);
  done();
}

void CudaBackend::done() {
  MPLAN_CUDA_CHECK(cudaPeekAtLastError());
  if (opt_.sync_each_op) MPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

bool sync_each_op_from_env() {
  const char* e = std::getenv("MPLAN_CUDA_SYNC");
  return e && *e && std::strcmp(e, "0") != 0;
}

void* CudaBackend::scratch(Scratch& s, size_t bytes) {
  if (bytes <= s.bytes) return s.p;
  // stream-ordered: the old block's queued users run before any later user of it
  pool_->release(s.p);
  s.bytes = std::max(bytes, s.bytes * 3 / 2);
  s.p = pool_->allocate(int64_t(s.bytes));
  return s.p;
}

namespace {
bool device_accessible(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}
}  // namespace

const int32_t* CudaBackend::dev_ints(const int32_t* p, int64_t n, int slot) {
  if (!p || n <= 0 || device_accessible(p)) return p;
  void* d = scratch(stage_[slot], size_t(n) * sizeof(int32_t));
  MPLAN_CUDA_CHECK(cudaMemcpyAsync(d, p, size_t(n) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
  return static_cast<const int32_t*>(d);
}

const float* CudaBackend::dev_floats(const float* p, int64_t n, int slot) {
  if (!p || n <= 0 || device_accessible(p)) return p;
  void* d = scratch(stage_[slot], size_t(n) * sizeof(float));
  MPLAN_CUDA_CHECK(cudaMemcpyAsync(d, p, size_t(n) * sizeof(float), cudaMemcpyHostToDevice, stream_));
  return static_cast<const float*>(d);
}

const int32_t* CudaBackend::host_ints(const int32_t* p, int64_t n, std::vector<int32_t>& keep) {
  if (!p || n <= 0 || !device_accessible(p)) return p;
  keep.resize(size_t(n));
  MPLAN_CUDA_CHECK(cudaMemcpyAsync(keep.data(), p, size_t(n) * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
  MPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return keep.data();
}

double CudaBackend::measure_gemm_gflops(int n, int reps) {
  const int64_t nn = int64_t(n) * n;
  Tensor a = alloc({nn}), b = alloc({nn}), c = alloc({nn});
  cudaEvent_t e0, e1;
  MPLAN_CUDA_CHECK(cudaEventCreate(&e0));
  MPLAN_CUDA_CHECK(cudaEventCreate(&e1));
  const bool sync = opt_.sync_each_op;
  opt_.sync_each_op = false;
  matmul_forward(c.data(), a.data(), b.data(), nullptr, n, n, n);  // warm-up (plan, conversion)
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    MPLAN_CUDA_CHECK(cudaEventRecord(e0, stream_));
    matmul_forward(c.data(), a.data(), b.data(), nullptr, n, n, n);
    MPLAN_CUDA_CHECK(cudaEventRecord(e1, stream_));
    MPLAN_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    MPLAN_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (ms > 0) best = std::max(best, 2.0 * double(n) * double(n) * double(n) / (double(ms) * 1e-3) / 1e9);
  }
  opt_.sync_each_op = sync;
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return best;
}

// ---------------------------------------------------------------------------------------------
// element-wise and reductions

void CudaBackend::zero(float* x, int64_t n) {
  fill_zero(x, n, stream_);
  done();
}
void CudaBackend::copy(float* dst, const float* src, int64_t n) {
  gpu::copy(dst, src, n, stream_);
  done();
}
void CudaBackend::add(float* out, const float* a, const float* b, int64_t n) {
  gpu::add(out, a, b, n, stream_);
  done();
}
void CudaBackend::accumulate(float* dst, const float* src, int64_t n) {
  gpu::accumulate(dst, src, n, stream_);
  done();
}
void CudaBackend::scale(float* x, float s, int64_t n) {
  gpu::scale(x, s, n, stream_);
  done();
}
double CudaBackend::sum_squares(const float* x, int64_t n) {
  auto* part = static_cast<double*>(scratch(reduce_, sizeof(double) * 1025));
  gpu::sum_squares(part + 1024, part, x, n, stream_);
  MPLAN_CUDA_CHECK(cudaMemcpyAsync(host_result_, part + 1024, sizeof(double), cudaMemcpyDeviceToHost, stream_));
  MPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return *host_result_;
}
bool CudaBackend::all_finite(const float* x, int64_t n) {
  auto* part = static_cast<double*>(scratch(reduce_, sizeof(double) * 1025));
  gpu::count_nonfinite(part + 1024, part, x, n, stream_);
  MPLAN_CUDA_CHECK(cudaMemcpyAsync(host_result_, part + 1024, sizeof(double), cudaMemcpyDeviceToHost, stream_));
  MPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return *host_result_ == 0.0;
}
void CudaBackend::add_bias(float* out, const float* bias, int64_t M, int64_t N) {
  gpu::add_bias(out, bias, M, N, stream_);
  done();
}
void CudaBackend::bias_backward(float* dbias, const float* dout, int64_t M, int64_t N) {
  column_sums(dbias, dout, M, N);
  done();
}

// ---------------------------------------------------------------------------------------------
// GEMMs

const void* CudaBackend::gemm_operand(const float* x, int64_t n, bool weight, int slot) {
  if (opt_.gemm == GemmPrecision::fp32) return x;
  if (weight && !working_.empty()) {  // inside an AdamW-updated range?
    auto it = working_.upper_bound(x);
    if (it != working_.begin()) {
      --it;
      const int64_t off = x - it->first;
      if (off + n <= it->second.n) {
        Working& w = it->second;
        if (w.version != param_version_) {  // refresh once after an update (and after ZeRO's all-gather)
          to_bf16(w.copy, it->first, w.n, stream_);
          w.version = param_version_;
        }
        return w.copy + off;
      }
    }
  }
  auto* d = static_cast<__nv_bfloat16*>(scratch(bf16_[slot], size_t(n) * sizeof(__nv_bfloat16)));
  to_bf16(d, x, n, stream_);
  return d;
}

namespace {
int64_t round8(int64_t n) { return (n + 7) / 8 * 8; }
}  // namespace

// op0/op1 are the row-major operands in the order of gemm_mapping's comment
void CudaBackend::gemm(RowMajorGemm kind, const float* op0, const float* op1, float* out, float beta, int64_t M, int64_t K,
                       int64_t N) {
  if (opt_.gemm == GemmPrecision::bf16 && kind != RowMajorGemm::forward) {
    backward_gemm_bf16(kind, dout_bf16(op0, M, N), op1, out, beta, M, K, N);
    return;
  }
  if (opt_.gemm == GemmPrecision::bf16 && N % 8 != 0) {
    forward_gemm_padded(op0, op1, out, beta, M, K, N);
    return;
  }
  const ColMajorGemm g = gemm_mapping(kind, M, K, N);
  const int64_t n0 = kind == RowMajorGemm::forward ? M * K : M * N;          // inp or dout
  const int64_t n1 = kind == RowMajorGemm::backward_weight ? M * K : N * K;  // W or inp
  const bool op1_weight = kind != RowMajorGemm::backward_weight;
  const void* b0 = gemm_operand(op0, n0, false, 0);
  const void* b1 = gemm_operand(op1, n1, op1_weight, 1);
  const void* A = g.a_operand == 0 ? b0 : b1;
  const void* B = g.b_operand == 0 ? b0 : b1;
  lt_->run(opt_.gemm, g, A, B, beta, out, stream_);
}

// A width N that is not a multiple of 8 (a vocabulary of 50257) keeps cuBLASLt on align1 kernels
// (CUTLASS sm75 tiles for GPT-2's LM head on an H200, 2026-11-28: 12 of its 16 ms): in bf16 such
// GEMMs run over N8 = N rounded up to 8 with zero padding (docs/gpu-runs/h200-2026-11-28).
const void* CudaBackend::weight_bf16(const float* w, int64_t N, int64_t K) {
  const void* src = gemm_operand(w, N * K, true, 1);
  if (N % 8 == 0) return src;
  const size_t used = size_t(N * K) * sizeof(__nv_bfloat16), all = size_t(round8(N) * K) * sizeof(__nv_bfloat16);
  auto* d = static_cast<char*>(scratch(padded_w_, all));
  MPLAN_CUDA_CHECK(cudaMemcpyAsync(d, src, used, cudaMemcpyDeviceToDevice, stream_));
  MPLAN_CUDA_CHECK(cudaMemsetAsync(d + used, 0, all - used, stream_));
  return d;
}

const void* CudaBackend::dout_bf16(const float* dout, int64_t M, int64_t N) {
  if (N % 8 == 0) return gemm_operand(dout, M * N, false, 0);
  auto* d = static_cast<__nv_bfloat16*>(scratch(bf16_[0], size_t(M * round8(N)) * sizeof(__nv_bfloat16)));
  gpu::to_bf16_rows(d, round8(N), dout, M, N, stream_);  // zero columns N .. N8-1
  return d;
}

void CudaBackend::backward_gemm_bf16(RowMajorGemm kind, const void* dout, const float* op1, float* out, float beta, int64_t M,
                                     int64_t K, int64_t N) {
  if (kind == RowMajorGemm::backward_input) {  // dinp^T = W^T . dout^T over k = N8: A = W (N8 rows), B = dout^T
    lt_->run(opt_.gemm, gemm_mapping(kind, M, K, round8(N)), weight_bf16(op1, N, K), dout, beta, out, stream_);
    return;
  }
  ColMajorGemm g = gemm_mapping(kind, M, K, N);  // dW^T (N rows) += inp^T . dout: A = inp, B = dout^T (stride N8)
  g.ldb = round8(N);
  lt_->run(opt_.gemm, g, gemm_operand(op1, M * K, false, 1), dout, beta, out, stream_);
}

void CudaBackend::forward_gemm_padded(const float* inp, const float* weight, float* out, float beta, int64_t M, int64_t K,
                                      int64_t N) {
  // out (M, N) = inp W^T computed as (M, N8) with W's N8 - N zero rows, into a scratch of row stride N8,
  // a block of rows at a time (padded_chunk_bytes, >= 64 rows), then copied into out
  const int64_t n8 = round8(N);
  const int64_t fit = opt_.padded_chunk_bytes / (n8 * int64_t(sizeof(float))) / 64 * 64;
  const int64_t rows = std::min(M, std::max<int64_t>(fit, 64));
  const void* w = weight_bf16(weight, N, K);
  auto* c = static_cast<float*>(scratch(padded_out_, size_t(rows * n8) * sizeof(float)));
  for (int64_t r0 = 0; r0 < M; r0 += rows) {
    const int64_t mr = std::min(rows, M - r0);
    const ColMajorGemm gr = gemm_mapping(RowMajorGemm::forward, mr, K, n8);  // m = N8, ldc = N8
    const void* x = gemm_operand(inp + r0 * K, mr * K, false, 0);
    if (beta != 0.0f) gpu::copy_rows(c, n8, out + r0 * N, N, mr, N, stream_);
    lt_->run(opt_.gemm, gr, w, x, beta, c, stream_);  // A = W (N8 rows), B = inp^T
    gpu::copy_rows(out + r0 * N, N, c, n8, mr, N, stream_);
  }
}

void CudaBackend::column_sums(float* dbias, const float* dout, int64_t M, int64_t N) {
  auto* sc = static_cast<float*>(scratch(column_, sizeof(float) * size_t(column_reduce_launch(M, N).scratch_elems())));
  gpu::bias_backward(dbias, sc, dout, M, N, stream_);
}

void CudaBackend::matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t M, int64_t K,
                                 int64_t N, bool accumulate) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (!accumulate) fill_zero(out, M * N, stream_);
  } else {
    gemm(RowMajorGemm::forward, inp, weight, out, accumulate ? 1.0f : 0.0f, M, K, N);
  }
  if (bias) gpu::add_bias(out, bias, M, N, stream_);
  done();
}

void CudaBackend::matmul_backward_input(float* dinp, const float* dout, const float* weight, int64_t M, int64_t K, int64_t N,
                                        bool accumulate) {
  if (M == 0 || K == 0) return;
  if (N == 0) {
    if (!accumulate) fill_zero(dinp, M * K, stream_);
  } else {
    gemm(RowMajorGemm::backward_input, dout, weight, dinp, accumulate ? 1.0f : 0.0f, M, K, N);
  }
  done();
}

void CudaBackend::matmul_backward(float* dinp, bool accumulate, float* dweight, float* dbias, const float* dout,
                                  const float* weight, const float* inp, int64_t M, int64_t K, int64_t N) {
  if (opt_.gemm != GemmPrecision::bf16 || M == 0 || N == 0 || K == 0) {
    Backend::matmul_backward(dinp, accumulate, dweight, dbias, dout, weight, inp, M, K, N);
    return;
  }
  const void* d = dout_bf16(dout, M, N);  // one bf16 copy of dout for both GEMMs
  if (dinp) backward_gemm_bf16(RowMajorGemm::backward_input, d, weight, dinp, accumulate ? 1.0f : 0.0f, M, K, N);
  backward_gemm_bf16(RowMajorGemm::backward_weight, d, inp, dweight, 1.0f, M, K, N);
  if (dbias) column_sums(dbias, dout, M, N);
  done();
}

void CudaBackend::matmul_backward_weight(float* dweight, float* dbias, const float* dout, const float* inp, int64_t M, int64_t K,
                                         int64_t N) {
  if (M == 0 || N == 0) return;
  if (K > 0) gemm(RowMajorGemm::backward_weight, dout, inp, dweight, 1.0f, M, K, N);
  if (dbias) column_sums(dbias, dout, M, N);
  done();
}

// ---------------------------------------------------------------------------------------------
// norms, RoPE, activations

void CudaBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                                    int64_t N, int64_t C, float eps) {
  gpu::layernorm_forward(out, mean, rstd, inp, w, b, N, C, eps, stream_);
  done();
}
void CudaBackend::layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                                     const float* mean, const float* rstd, int64_t N, int64_t C, bool accumulate) {
  auto* sc = static_cast<float*>(scratch(column_, sizeof(float) * size_t(column_reduce_launch(N, C).scratch_elems())));
  gpu::layernorm_backward(dinp, dw, db, sc, dout, inp, w, mean, rstd, N, C, accumulate, stream_);
  done();
}
void CudaBackend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int64_t N, int64_t C, float eps) {
  gpu::rmsnorm_forward(out, rstd, inp, w, N, C, eps, stream_);
  done();
}
void CudaBackend::rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, const float* rstd,
                                   int64_t N, int64_t C, bool accumulate) {
  auto* sc = static_cast<float*>(scratch(column_, sizeof(float) * size_t(column_reduce_launch(N, C).scratch_elems())));
  gpu::rmsnorm_backward(dinp, dw, sc, dout, inp, w, rstd, N, C, accumulate, stream_);
  done();
}

void CudaBackend::rope_forward(float* x, const int32_t* pos, int64_t N, int64_t H, int64_t D, float base) {
  gpu::rope(x, dev_ints(pos, N, 0), N, H, D, base, 1.0f, stream_);
  done();
}
void CudaBackend::rope_backward(float* dx, const int32_t* pos, int64_t N, int64_t H, int64_t D, float base) {
  gpu::rope(dx, dev_ints(pos, N, 0), N, H, D, base, -1.0f, stream_);
  done();
}

namespace {
int act_code(ActKind a) { return a == ActKind::gelu ? 0 : a == ActKind::swiglu ? 1 : 2; }
}  // namespace

void CudaBackend::act_forward(ActKind a, float* out, const float* inp, int64_t N, int64_t F) {
  gpu::act_forward(act_code(a), out, inp, N, F, stream_);
  done();
}
void CudaBackend::act_backward(ActKind a, float* dinp, const float* dout, const float* inp, int64_t N, int64_t F) {
  gpu::act_backward(act_code(a), dinp, dout, inp, N, F, stream_);
  done();
}

// ---------------------------------------------------------------------------------------------
// attention

gpu::AttnLaunch CudaBackend::attn_launch(int kind, const AttnShape& s) const {
  const auto k = kind == 0 ? AttnKernel::forward : kind == 1 ? AttnKernel::backward_dq : AttnKernel::backward_dkv;
  AttnLaunch l = attention_launch(k, s.B, s.Tq, s.Tk, s.Hq, s.Hkv, s.D, s.Dv, max_smem_);
  if (!l.ok) fatal_error("attention launch configuration", l.error.c_str(), __FILE__, __LINE__);
  return l;
}

namespace {
AttnDims dims_of(const Backend::AttnShape& s) { return {s.B, s.Tq, s.Tk, s.Hq, s.Hkv, s.D, s.Dv, s.scale}; }
sdpa::Shape sdpa_of(const Backend::AttnShape& s) { return {s.B, s.Tq, s.Tk, s.Hq, s.Hkv, s.D, s.Dv, s.scale}; }
}  // namespace

bool CudaBackend::use_cudnn(const int32_t* qpos, const int32_t* kpos, const AttnShape& s, bool merge) const {
  if (!cudnn_ || merge || s.Tq != s.Tk) return false;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, qpos) != cudaSuccess || a.type == cudaMemoryTypeDevice ||
      cudaPointerGetAttributes(&a, kpos) != cudaSuccess || a.type == cudaMemoryTypeDevice) {
    cudaGetLastError();  // positions on the device: not inspected here, the fp32 kernels serve the call
    return false;
  }
  for (int64_t i = 0; i < s.Tq; ++i)
    if (qpos[i] != kpos[i] || qpos[i] != qpos[0] + i) return false;
  cudnn_->require_supported(sdpa_of(s));
  return true;
}

void CudaBackend::attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, const int32_t* qpos,
                                    const int32_t* kpos, const AttnShape& s, bool merge) {
  if (s.B == 0 || s.Tq == 0) return;
  if (s.Tk == 0) {  // no keys: nothing visible
    if (!merge) {
      fill_zero(out, s.B * s.Tq * s.Hq * s.Dv, stream_);
      std::vector<float> ninf(size_t(s.B * s.Hq * s.Tq), -std::numeric_limits<float>::infinity());
      MPLAN_CUDA_CHECK(cudaMemcpyAsync(lse, ninf.data(), ninf.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
      MPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    done();
    return;
  }
  if (use_cudnn(qpos, kpos, s, merge)) {
    cudnn_->forward(out, lse, q, k, v, sdpa_of(s));
    done();
    return;
  }
  gpu::attention_forward(out, lse, q, k, v, dev_ints(qpos, s.Tq, 0), dev_ints(kpos, s.Tk, 1), dims_of(s), merge,
                         attn_launch(0, s), stream_);
  done();
}

void CudaBackend::attention_backward_prepare(float* delta, const float* dout, const float* out, const AttnShape& s) {
  prepared_dout_ = dout, prepared_out_ = out;
  gpu::attention_prepare(delta, dout, out, dims_of(s), stream_);
  done();
}

void CudaBackend::attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* lse, const float* delta,
                                     const float* q, const float* k, const float* v, const int32_t* qpos, const int32_t* kpos,
                                     const AttnShape& s) {
  if (s.B == 0 || s.Tq == 0 || s.Tk == 0) return;
  if (dout == prepared_dout_ && use_cudnn(qpos, kpos, s, false)) {
    cudnn_->backward(dq, dk, dv, dout, prepared_out_, lse, q, k, v, sdpa_of(s));
    done();
    return;
  }
  gpu::attention_backward(dq, dk, dv, dout, lse, delta, q, k, v, dev_ints(qpos, s.Tq, 0), dev_ints(kpos, s.Tk, 1), dims_of(s),
                          attn_launch(1, s), attn_launch(2, s), stream_);
  done();
}

// ---------------------------------------------------------------------------------------------
// embeddings and rows

void CudaBackend::scatter_rows(float* dst, const float* src, const int32_t* rows_host, int64_t offset, int64_t limit,
                               const float* w, int64_t n, int64_t C) {
  // (destination row, source index) in source order, stably grouped by destination row
  std::vector<std::pair<int32_t, int32_t>> pairs;
  pairs.reserve(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = int64_t(rows_host[i]) - offset;
    if (r >= 0 && r < limit) pairs.emplace_back(int32_t(r), int32_t(i));
  }
  if (pairs.empty()) return;
  std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int32_t> csr;  // [dst rows (u) | offsets (u + 1) | source indices]
  std::vector<int32_t> dst_rows, offsets{0}, src_idx;
  for (size_t e = 0; e < pairs.size(); ++e) {
    if (e == 0 || pairs[e].first != pairs[e - 1].first) {
      if (e > 0) offsets.push_back(int32_t(e));
      dst_rows.push_back(pairs[e].first);
    }
    src_idx.push_back(pairs[e].second);
  }
  offsets.push_back(int32_t(pairs.size()));
  csr.insert(csr.end(), dst_rows.begin(), dst_rows.end());
  csr.insert(csr.end(), offsets.begin(), offsets.end());
  csr.insert(csr.end(), src_idx.begin(), src_idx.end());
  auto* d = static_cast<int32_t*>(scratch(stage_[2], csr.size() * sizeof(int32_t)));
  MPLAN_CUDA_CHECK(cudaMemcpyAsync(d, csr.data(), csr.size() * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
  const int64_t u = int64_t(dst_rows.size());
  scatter_add_csr(dst, src, d, d + u, d + 2 * u + 1, dev_floats(w, n, 3), u, C, stream_);
}

void CudaBackend::embedding_forward(float* out, const int32_t* tokens, const float* wte, int64_t N, int64_t C, int64_t vstart,
                                    int64_t rows) {
  gpu::embedding_forward(out, dev_ints(tokens, N, 0), wte, N, C, vstart, rows, stream_);
  done();
}
void CudaBackend::embedding_backward(float* dwte, const float* dout, const int32_t* tokens, int64_t N, int64_t C, int64_t vstart,
                                     int64_t rows) {
  std::vector<int32_t> keep;
  scatter_rows(dwte, dout, host_ints(tokens, N, keep), vstart, rows, nullptr, N, C);
  done();
}
void CudaBackend::position_forward(float* out, const float* wpe, const int32_t* pos, int64_t N, int64_t C) {
  gpu::position_forward(out, wpe, dev_ints(pos, N, 0), N, C, stream_);
  done();
}
void CudaBackend::position_backward(float* dwpe, const float* dout, const int32_t* pos, int64_t N, int64_t C) {
  std::vector<int32_t> keep;
  scatter_rows(dwpe, dout, host_ints(pos, N, keep), 0, std::numeric_limits<int32_t>::max(), nullptr, N, C);
  done();
}
void CudaBackend::gather_rows(float* dst, const float* src, const int32_t* rows, int64_t n, int64_t C) {
  gpu::gather_rows(dst, src, dev_ints(rows, n, 0), n, C, stream_);
  done();
}
void CudaBackend::scatter_add_rows(float* dst, const float* src, const int32_t* rows, const float* w, int64_t n, int64_t C) {
  std::vector<int32_t> keep;
  scatter_rows(dst, src, host_ints(rows, n, keep), 0, std::numeric_limits<int32_t>::max(), w, n, C);
  done();
}
void CudaBackend::scale_rows(float* x, const float* s, int64_t n, int64_t C) {
  gpu::scale_rows(x, dev_floats(s, n, 0), n, C, stream_);
  done();
}
void CudaBackend::row_dot(float* out, const float* a, const float* b, int64_t n, int64_t C) {
  gpu::row_dot(out, a, b, n, C, stream_);
  done();
}

// ---------------------------------------------------------------------------------------------
// cross-entropy, router, AdamW

void CudaBackend::xent_rowmax(float* rowmax, const float* logits, int64_t N, int64_t V, int64_t valid) {
  gpu::xent_rowmax(rowmax, logits, N, V, valid, stream_);
  done();
}
void CudaBackend::xent_sumexp_target(float* sumexp, float* tlogit, float* logits, const float* gmax, const int32_t* targets,
                                     int64_t N, int64_t V, int64_t valid, int64_t vstart) {
  gpu::xent_sumexp_target(sumexp, tlogit, logits, gmax, dev_ints(targets, N, 0), N, V, valid, vstart, stream_);
  done();
}
void CudaBackend::xent_backward(float* logits, const float* gmax, const float* gsumexp, const int32_t* targets,
                                const float* dloss, int64_t N, int64_t V, int64_t valid, int64_t vstart) {
  (void)gmax;  // the forward already subtracted it
  gpu::xent_backward(logits, gsumexp, dev_ints(targets, N, 0), dev_floats(dloss, N, 1), N, V, valid, vstart, stream_);
  done();
}

void CudaBackend::moe_route_forward(float* probs, int32_t* idx, float* weights, const float* logits, int64_t N, int64_t E,
                                    int64_t k) {
  if (N == 0) return;
  const bool on_device = device_accessible(idx);
  int32_t* d = on_device ? idx : static_cast<int32_t*>(scratch(stage_[0], size_t(N * k) * sizeof(int32_t)));
  gpu::moe_route_forward(probs, d, weights, logits, N, E, k, stream_);
  if (!on_device) MPLAN_CUDA_CHECK(cudaMemcpyAsync(idx, d, size_t(N * k) * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
  MPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_));  // idx is read on the host right away
  done();
}
void CudaBackend::moe_route_backward(float* dlogits, const float* dweights, const float* dprobs, const float* probs,
                                     const int32_t* idx, const float* weights, int64_t N, int64_t E, int64_t k) {
  gpu::moe_route_backward(dlogits, dweights, dprobs, probs, dev_ints(idx, N * k, 0), weights, N, E, k, stream_);
  done();
}

void CudaBackend::adamw(float* param, const float* grad, float* m, float* v, int64_t n, const AdamWArgs& a) {
  if (n <= 0) return;
  gpu::adamw(param, grad, m, v, n, km::adamw_consts(a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.step), stream_);
  ++param_version_;
  if (opt_.gemm == GemmPrecision::bf16 && !working_.count(param)) {  // this range now has a bf16 working copy
    Working w;
    w.n = n;
    w.copy = static_cast<__nv_bfloat16*>(pool_->allocate(n * int64_t(sizeof(__nv_bfloat16))));
    mem_.add(n * int64_t(sizeof(__nv_bfloat16)));
    working_[param] = w;
  }
  done();
}

}  // namespace mplan::exec
