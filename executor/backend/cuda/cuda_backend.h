// The CUDA backend: the Backend interface on one GPU. Tensors are fp32 in device memory from a
// caching pool (cuda_memory.h); the host reads and writes them only through upload/download.
// GEMMs run through cuBLASLt (fp32, or bf16 operands with fp32 accumulation when the plan trains in bf16: the fp32
// parameter buffer is the master copy and AdamW-updated ranges get bf16 working copies, refreshed
// once per update); every other op is a kernel of cuda_kernels.cu / cuda_attention.cu using the
// per-element math of kernel_math.h. Ops are enqueued on one compute stream without synchronising
// (MPLAN_CUDA_SYNC=1 synchronises after each op, to localise an asynchronous fault); download,
// the reductions that return a value and the step's end wait for the stream. Communication runs on
// the NCCL communicator's own stream. Host index arrays (tokens, positions, routing) are staged.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "executor/backend/backend.h"
#include "executor/backend/cuda/cuda_gemm.h"
#include "executor/backend/cuda/cuda_memory.h"
#include "executor/backend/cuda/cudnn_attention.h"
#include "executor/backend/cuda/launch_config.h"

namespace mplan::exec {

// MPLAN_CUDA_SYNC=1 (debugging): synchronise after every op, so an asynchronous fault is reported
// by the op that caused it.
bool sync_each_op_from_env();

struct CudaBackendOptions {
  int device = 0;
  gpu::GemmPrecision gemm = gpu::GemmPrecision::fp32;
  bool sync_each_op = sync_each_op_from_env();
  int64_t predicted_peak_bytes = 0;  // the plan's predicted peak per GPU, for the out-of-memory message (0: unknown)
  bool cudnn_attention = false;      // whole-sequence causal attention through cuDNN (bf16); gpu::decide_attention
  std::string attention_note;        // why the fp32 attention kernels serve a bf16 job (shown by describe())
  int64_t padded_chunk_bytes = int64_t(128) << 20;  // the aligned scratch of a forward GEMM of width N % 8 != 0
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaBackendOptions& o);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override { return "cuda"; }
  std::string describe() const override;
  Tensor alloc(std::vector<int64_t> shape) override;

  cudaStream_t stream() const { return stream_; }
  int device() const { return opt_.device; }
  gpu::GemmPrecision gemm_precision() const { return opt_.gemm; }
  void synchronize() override;
  int64_t peak_device_bytes() const override;
  const gpu::DevicePool& pool() const { return *pool_; }
  void upload(float* dst, const float* host, int64_t n) override;
  void download(float* host, const float* src, int64_t n) override;
  void init_param(float* p, const int64_t* global_rows, const InitArgs& a) override;
  // Measured GEMM speed in GFLOP/s (n^3 products in this backend's GEMM precision, best of reps).
  double measure_gemm_gflops(int n = 4096, int reps = 5);

  // Backend's kernels (zero ... adamw), declared once for every backend
#include "executor/backend/backend_kernels.inc"
  void matmul_backward(float* dinp, bool accumulate, float* dweight, float* dbias, const float* dout, const float* weight,
                       const float* inp, int64_t M, int64_t K, int64_t N) override;

 private:
  // Device scratch that grows on demand (plain device memory; only kernels touch it).
  struct Scratch {
    void* p = nullptr;
    size_t bytes = 0;
  };
  void* scratch(Scratch& s, size_t bytes);
  // Device view of an index/float array the caller may hold on the host (staged into `slot`).
  const int32_t* dev_ints(const int32_t* p, int64_t n, int slot);
  const float* dev_floats(const float* p, int64_t n, int slot);
  // Host copy of an index array that may live on the device.
  const int32_t* host_ints(const int32_t* p, int64_t n, std::vector<int32_t>& keep);
  // dst[rows[i]] += (w ? w[i] : 1) src[i] via a CSR built on the host (deterministic, CPU order);
  // rows outside [0, limit) are skipped (vocabulary shards).
  void scatter_rows(float* dst, const float* src, const int32_t* rows_host, int64_t offset, int64_t limit, const float* w,
                    int64_t n, int64_t C);
  // bf16 operand for a GEMM: the working copy of an AdamW-updated range, else converted into `slot`.
  const void* gemm_operand(const float* x, int64_t n, bool weight, int slot);
  void gemm(gpu::RowMajorGemm kind, const float* op0, const float* op1, float* out, float beta, int64_t M, int64_t K, int64_t N);
  // bf16 GEMMs over N8 = N rounded up to 8 where N is not a multiple of 8: W (N, K) with N8 - N zero
  // rows and dout (M, N) with N8 - N zero columns (bf16 scratch copies; the plain operands otherwise)
  const void* weight_bf16(const float* w, int64_t N, int64_t K);
  const void* dout_bf16(const float* dout, int64_t M, int64_t N);
  // the input- or weight-gradient GEMM from dout's bf16 copy (row stride N rounded up to 8)
  void backward_gemm_bf16(gpu::RowMajorGemm kind, const void* dout, const float* op1, float* out, float beta, int64_t M,
                          int64_t K, int64_t N);
  void forward_gemm_padded(const float* inp, const float* weight, float* out, float beta, int64_t M, int64_t K, int64_t N);
  void column_sums(float* dbias, const float* dout, int64_t M, int64_t N);  // dbias += column sums of dout
  gpu::AttnLaunch attn_launch(int kind, const AttnShape& s) const;
  // the cuDNN path serves this call: whole causal sequences (qpos == kpos == consecutive positions,
  // host arrays), no merge; context-parallel blocks keep the fp32 kernels
  bool use_cudnn(const int32_t* qpos, const int32_t* kpos, const AttnShape& s, bool merge) const;
  void done();  // end of an op: synchronise (sync_each_op) and surface asynchronous errors

  CudaBackendOptions opt_;
  cudaStream_t stream_ = nullptr;
  static constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;
  std::shared_ptr<gpu::DevicePool> pool_;
  void* lt_workspace_ = nullptr;  // from the pool (counted)
  std::unique_ptr<gpu::LtGemm> lt_;
  Scratch reduce_, column_, bf16_[2], padded_out_, padded_w_, stage_[4];
  double* host_result_ = nullptr;  // pinned
  int64_t max_smem_ = 0;
  std::string device_name_;
  int sm_major_ = 0, sm_minor_ = 0, sm_count_ = 0;
  size_t device_bytes_ = 0;
  // bf16 working copies of AdamW-updated ranges: start -> (elements, copy, version converted at)
  struct Working {
    int64_t n = 0;
    __nv_bfloat16* copy = nullptr;
    uint64_t version = 0;
  };
  std::map<const float*, Working> working_;
  uint64_t param_version_ = 1;                  // bumped by every AdamW update
  std::unique_ptr<gpu::CudnnAttention> cudnn_;  // MPLAN_ATTENTION=cudnn only
  // attention_backward_prepare's (dout, out): cuDNN's backward needs the forward output
  const float* prepared_dout_ = nullptr;
  const float* prepared_out_ = nullptr;
};

}  // namespace mplan::exec
