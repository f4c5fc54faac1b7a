// Backend: the one interface every compute device implements (ggml style). The model and parallel
// layers call only these kernels; the CPU backend (fp32, OpenBLAS) is the oracle the CUDA backend
// (issue 7) is checked against, op by op. Pointers point into the backend's memory; row-major shapes
// are given in the comments, N = tokens. Integer index arrays (tokens, positions, routing) are host
// arrays on the CPU backend.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "executor/backend/kernel_math.h"
#include "executor/tensor/tensor.h"

namespace mplan::exec {

enum class ActKind { gelu, swiglu, squared_relu };

struct AdamWArgs {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  int step = 1;  // 1-based, for bias correction
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;      // "cpu"
  virtual std::string describe() const = 0;  // e.g. "cpu fp32, OpenBLAS 0.3.21 (Haswell kernels), 1 thread"

  MemoryTracker& memory() { return mem_; }
  // Zero-filled fp32 tensor in this backend's memory.
  virtual Tensor alloc(std::vector<int64_t> shape) { return Tensor::zeros(std::move(shape), &mem_); }

  // ---- host <-> backend memory: the only way the host reads or writes a tensor's elements (the
  // CUDA backend's memory is device memory). download waits for the backend's queued work. ----
  virtual void upload(float* dst, const float* host, int64_t n) {
    if (n > 0) std::memcpy(dst, host, size_t(n) * sizeof(float));
  }
  virtual void download(float* host, const float* src, int64_t n) {
    if (n > 0) std::memcpy(host, src, size_t(n) * sizeof(float));
  }
  // Waits until every enqueued op has finished (before a step's time is read; no-op on the CPU).
  virtual void synchronize() {}
  // Peak bytes taken from the device for everything the backend allocated (tensors, scratch,
  // workspaces, low-precision copies); -1 when the backend computes in host memory (the CPU
  // backend: the process's peak RSS is its memory).
  virtual int64_t peak_device_bytes() const { return -1; }

  // ---- parameter initialisation: a (rows, cols) shard of a full (., full_cols) tensor; local row i
  // is global row global_rows[i] (host array; < 0 = padding, set to 0); element (i, j) gets
  // km::init_normal(seed, name_key, global_rows[i] * full_cols + col_begin + j, stddev), or
  // `constant` when !normal ----
  struct InitArgs {
    int64_t rows = 0, cols = 1, full_cols = 1, col_begin = 0;
    uint64_t seed = 0, name_key = 0;
    bool normal = true;
    float stddev = 0.02f, constant = 0.0f;
  };
  virtual void init_param(float* p, const int64_t* global_rows, const InitArgs& a) {
    for (int64_t i = 0; i < a.rows; ++i) {
      const int64_t gr = global_rows[i];
      float* row = p + i * a.cols;
      for (int64_t j = 0; j < a.cols; ++j)
        row[j] = gr < 0     ? 0.0f
                 : a.normal ? km::init_normal(a.seed, a.name_key, gr * a.full_cols + a.col_begin + j, a.stddev)
                            : a.constant;
    }
  }

  // ---- elementwise ----
  virtual void zero(float* x, int64_t n) = 0;
  virtual void copy(float* dst, const float* src, int64_t n) = 0;
  virtual void add(float* out, const float* a, const float* b, int64_t n) = 0;  // out = a + b (may alias)
  virtual void accumulate(float* dst, const float* src, int64_t n) = 0;         // dst += src
  virtual void scale(float* x, float s, int64_t n) = 0;
  virtual double sum_squares(const float* x, int64_t n) = 0;  // in double
  virtual bool all_finite(const float* x, int64_t n) = 0;
  // out (M, N) += bias (N) on every row; dbias (N) += column sums of dout (M, N)
  virtual void add_bias(float* out, const float* bias, int64_t M, int64_t N) = 0;
  virtual void bias_backward(float* dbias, const float* dout, int64_t M, int64_t N) = 0;

  // ---- GEMM (weights as in torch.nn.Linear: (out_features, in_features)) ----
  // out (M, N) = inp (M, K) @ weight(N, K)^T [+ bias (N)]; accumulate adds into out instead.
  virtual void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t M, int64_t K,
                              int64_t N, bool accumulate = false) = 0;
  // dinp (M, K) (+)= dout (M, N) @ weight (N, K)
  virtual void matmul_backward_input(float* dinp, const float* dout, const float* weight, int64_t M, int64_t K, int64_t N,
                                     bool accumulate) = 0;
  // dweight (N, K) += dout(M, N)^T @ inp (M, K); dbias (N) += column sums of dout (when non-null)
  virtual void matmul_backward_weight(float* dweight, float* dbias, const float* dout, const float* inp, int64_t M, int64_t K,
                                      int64_t N) = 0;
  // both of the above with one dout (dinp may be null: no input gradient); a backend may share work
  // between them (the CUDA backend converts dout to bf16 once)
  virtual void matmul_backward(float* dinp, bool accumulate, float* dweight, float* dbias, const float* dout, const float* weight,
                               const float* inp, int64_t M, int64_t K, int64_t N) {
    if (dinp) matmul_backward_input(dinp, dout, weight, M, K, N, accumulate);
    matmul_backward_weight(dweight, dbias, dout, inp, M, K, N);
  }

  // ---- norms over the last dimension C of (N, C) ----
  // out = (x - mean) * rstd * w + b; saves mean (N), rstd (N)
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                                 int64_t N, int64_t C, float eps) = 0;
  // dinp (+)= ...; dw, db += ...
  virtual void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                                  const float* mean, const float* rstd, int64_t N, int64_t C, bool accumulate) = 0;
  // out = x * rstd * w; saves rstd (N)
  virtual void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int64_t N, int64_t C, float eps) = 0;
  virtual void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, const float* rstd,
                                int64_t N, int64_t C, bool accumulate) = 0;

  // ---- rotary position embedding, rotate-half convention, in place on (N, H, D) ----
  // token n has position pos[n]; angle = pos * base^(-2i/D) for pair (i, i + D/2)
  virtual void rope_forward(float* x, const int32_t* pos, int64_t N, int64_t H, int64_t D, float base) = 0;
  virtual void rope_backward(float* dx, const int32_t* pos, int64_t N, int64_t H, int64_t D, float base) = 0;

  // ---- attention core (flash style: scores are never stored, the softmax statistics are) ----
  // One block of keys: q (B, Tq, Hq, D), k (B, Tk, Hkv, D), v (B, Tk, Hkv, Dv); key j is visible to
  // query i when kpos[j] <= qpos[i] (causal by global position, so context-parallel chunks work).
  // out (B, Tq, Hq, Dv), lse (B, Hq, Tq): written when !merge, else merged with the running values
  // (online softmax), so a ring over key blocks gives the full attention.
  struct AttnShape {
    int64_t B = 0, Tq = 0, Tk = 0, Hq = 0, Hkv = 0, D = 0, Dv = 0;
    float scale = 1.0f;
  };
  virtual void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, const int32_t* qpos,
                                 const int32_t* kpos, const AttnShape& s, bool merge) = 0;
  // delta (B, Hq, Tq) = rowsum(dout * out), once before the backward blocks.
  virtual void attention_backward_prepare(float* delta, const float* dout, const float* out, const AttnShape& s) = 0;
  // dq (+)= ..., dk, dv (+)= ... for one key block, with the final out/lse of the forward.
  virtual void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* lse, const float* delta,
                                  const float* q, const float* k, const float* v, const int32_t* qpos, const int32_t* kpos,
                                  const AttnShape& s) = 0;

  // ---- activations: inp (N, F) or, for swiglu, (N, 2F) as [gate | up]; out (N, F) ----
  virtual void act_forward(ActKind a, float* out, const float* inp, int64_t N, int64_t F) = 0;
  virtual void act_backward(ActKind a, float* dinp, const float* dout, const float* inp, int64_t N, int64_t F) = 0;

  // ---- embeddings (vocabulary-parallel: this rank owns rows [vstart, vstart + rows)) ----
  // out (N, C) = wte[tok - vstart] for owned tokens, 0 otherwise
  virtual void embedding_forward(float* out, const int32_t* tokens, const float* wte, int64_t N, int64_t C, int64_t vstart,
                                 int64_t rows) = 0;
  virtual void embedding_backward(float* dwte, const float* dout, const int32_t* tokens, int64_t N, int64_t C, int64_t vstart,
                                  int64_t rows) = 0;
  // out (N, C) += wpe[pos]; dwpe[pos] += dout
  virtual void position_forward(float* out, const float* wpe, const int32_t* pos, int64_t N, int64_t C) = 0;
  virtual void position_backward(float* dwpe, const float* dout, const int32_t* pos, int64_t N, int64_t C) = 0;

  // ---- vocabulary-parallel softmax cross-entropy over logits (N, V) of which `valid` columns exist ----
  virtual void xent_rowmax(float* rowmax, const float* logits, int64_t N, int64_t V, int64_t valid) = 0;
  // sumexp[n] = sum exp(l - gmax[n]); tlogit[n] = logit of the target when this shard owns it, else 0;
  // the logits are replaced by exp(l - gmax[n]) (reused by the backward)
  virtual void xent_sumexp_target(float* sumexp, float* tlogit, float* logits, const float* gmax, const int32_t* targets,
                                  int64_t N, int64_t V, int64_t valid, int64_t vstart) = 0;
  // in place: exp(l - gmax) from xent_sumexp_target -> dlogits = (softmax - onehot) * dloss[n]
  virtual void xent_backward(float* logits, const float* gmax, const float* gsumexp, const int32_t* targets, const float* dloss,
                             int64_t N, int64_t V, int64_t valid, int64_t vstart) = 0;

  // ---- mixture of experts ----
  // probs (N, E) = softmax(logits); idx/weights (N, k): top-k experts by logit, weights = softmax over them
  virtual void moe_route_forward(float* probs, int32_t* idx, float* weights, const float* logits, int64_t N, int64_t E,
                                 int64_t k) = 0;
  // dlogits (N, E) = topk-softmax backward of dweights + full-softmax backward of dprobs (may be null)
  virtual void moe_route_backward(float* dlogits, const float* dweights, const float* dprobs, const float* probs,
                                  const int32_t* idx, const float* weights, int64_t N, int64_t E, int64_t k) = 0;
  // dst[i] = src[rows[i]] for i < n (rows of width C)
  virtual void gather_rows(float* dst, const float* src, const int32_t* rows, int64_t n, int64_t C) = 0;
  // dst[rows[i]] += (w ? w[i] : 1) * src[i]
  virtual void scatter_add_rows(float* dst, const float* src, const int32_t* rows, const float* w, int64_t n, int64_t C) = 0;
  // x[i] *= s[i] for rows of width C
  virtual void scale_rows(float* x, const float* s, int64_t n, int64_t C) = 0;
  // out[i] = dot(a[i], b[i]) over rows of width C
  virtual void row_dot(float* out, const float* a, const float* b, int64_t n, int64_t C) = 0;

  // ---- optimizer (torch.optim.AdamW semantics) ----
  virtual void adamw(float* param, const float* grad, float* m, float* v, int64_t n, const AdamWArgs& a) = 0;

 protected:
  MemoryTracker mem_;
};

}  // namespace mplan::exec
