// The CPU backend: fp32 kernels written llm.c style (plain loops, shapes in comments) with GEMMs
// through OpenBLAS's cblas_sgemm. Single-threaded per rank: parallelism comes from MPI ranks.
#pragma once
#include "executor/backend/backend.h"

namespace mplan::exec {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string describe() const override;

  void zero(float* x, int64_t n) override;
  void copy(float* dst, const float* src, int64_t n) override;
  void add(float* out, const float* a, const float* b, int64_t n) override;
  void accumulate(float* dst, const float* src, int64_t n) override;
  void scale(float* x, float s, int64_t n) override;
  double sum_squares(const float* x, int64_t n) override;
  bool all_finite(const float* x, int64_t n) override;
  void add_bias(float* out, const float* bias, int64_t M, int64_t N) override;
  void bias_backward(float* dbias, const float* dout, int64_t M, int64_t N) override;

  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t M, int64_t K, int64_t N,
                      bool accumulate = false) override;
  void matmul_backward_input(float* dinp, const float* dout, const float* weight, int64_t M, int64_t K, int64_t N,
                             bool accumulate) override;
  void matmul_backward_weight(float* dweight, float* dbias, const float* dout, const float* inp, int64_t M, int64_t K,
                              int64_t N) override;

  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int64_t N,
                         int64_t C, float eps) override;
  void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                          const float* mean, const float* rstd, int64_t N, int64_t C, bool accumulate) override;
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int64_t N, int64_t C, float eps) override;
  void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, const float* rstd, int64_t N,
                        int64_t C, bool accumulate) override;

  void rope_forward(float* x, const int32_t* pos, int64_t N, int64_t H, int64_t D, float base) override;
  void rope_backward(float* dx, const int32_t* pos, int64_t N, int64_t H, int64_t D, float base) override;

  void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, const int32_t* qpos,
                         const int32_t* kpos, const AttnShape& s, bool merge) override;
  void attention_backward_prepare(float* delta, const float* dout, const float* out, const AttnShape& s) override;
  void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* lse, const float* delta,
                          const float* q, const float* k, const float* v, const int32_t* qpos, const int32_t* kpos,
                          const AttnShape& s) override;

  void act_forward(ActKind a, float* out, const float* inp, int64_t N, int64_t F) override;
  void act_backward(ActKind a, float* dinp, const float* dout, const float* inp, int64_t N, int64_t F) override;

  void embedding_forward(float* out, const int32_t* tokens, const float* wte, int64_t N, int64_t C, int64_t vstart,
                         int64_t rows) override;
  void embedding_backward(float* dwte, const float* dout, const int32_t* tokens, int64_t N, int64_t C, int64_t vstart,
                          int64_t rows) override;
  void position_forward(float* out, const float* wpe, const int32_t* pos, int64_t N, int64_t C) override;
  void position_backward(float* dwpe, const float* dout, const int32_t* pos, int64_t N, int64_t C) override;

  void xent_rowmax(float* rowmax, const float* logits, int64_t N, int64_t V, int64_t valid) override;
  void xent_sumexp_target(float* sumexp, float* tlogit, float* logits, const float* gmax, const int32_t* targets, int64_t N,
                          int64_t V, int64_t valid, int64_t vstart) override;
  void xent_backward(float* logits, const float* gmax, const float* gsumexp, const int32_t* targets, const float* dloss,
                     int64_t N, int64_t V, int64_t valid, int64_t vstart) override;

  void moe_route_forward(float* probs, int32_t* idx, float* weights, const float* logits, int64_t N, int64_t E,
                         int64_t k) override;
  void moe_route_backward(float* dlogits, const float* dweights, const float* dprobs, const float* probs, const int32_t* idx,
                          const float* weights, int64_t N, int64_t E, int64_t k) override;
  void gather_rows(float* dst, const float* src, const int32_t* rows, int64_t n, int64_t C) override;
  void scatter_add_rows(float* dst, const float* src, const int32_t* rows, const float* w, int64_t n, int64_t C) override;
  void scale_rows(float* x, const float* s, int64_t n, int64_t C) override;
  void row_dot(float* out, const float* a, const float* b, int64_t n, int64_t C) override;

  void adamw(float* param, const float* grad, float* m, float* v, int64_t n, const AdamWArgs& a) override;
};

}  // namespace mplan::exec
