// Exec: what every layer function needs, passed explicitly (backend, process groups, this rank's
// sizes, the parameters, the op timers), plus the deferred weight-gradient queue of zero-bubble
// schedules (when set, GEMM weight gradients are queued by B and run by W).
#pragma once
#include <vector>

#include "executor/backend/backend.h"
#include "executor/comm/groups.h"
#include "executor/model/dims.h"
#include "executor/model/params.h"
#include "executor/train/op_timers.h"

namespace mplan::exec {

// One deferred weight-gradient GEMM: dw (N, K) += dout (M, N)^T @ inp (M, K), db += colsum(dout).
struct WgradJob {
  float* dw = nullptr;
  float* db = nullptr;
  const float* dout = nullptr;
  const float* inp = nullptr;
  int64_t M = 0, K = 0, N = 0;
  Tensor keep_dout, keep_inp;  // keep the operands alive until W runs
  const char* op = "";
};

struct Exec {
  Backend& be;
  ProcessGroups& g;
  const LayoutDims& d;
  ParamStore& ps;
  OpTimers& timers;
  std::vector<WgradJob>* defer = nullptr;
  double* aux_loss = nullptr;                    // MoE load-balancing loss of this step, summed by the reporting ranks
  bool recomputing = false;                      // a recompute forward (do not count losses twice)
  std::vector<float>* capture_logits = nullptr;  // tests: append the LM head's logits (N, V_l)

  Tensor alloc(std::vector<int64_t> shape) { return be.alloc(std::move(shape)); }
};

// Linear layer backward (torch.nn.Linear weight (N, K)): dinp (M, K) (+)= dout (M, N) @ W, and the
// weight/bias gradients now or, in a zero-bubble B pass, queued for W. `dout_t`/`inp_t` own the data.
void linear_backward(Exec& ex, const char* op, float* dinp, bool accumulate, const Tensor& dout_t, const float* dout,
                     const Tensor& inp_t, const float* inp, int w, int b, int64_t M, int64_t K, int64_t N);
// Runs (and clears) queued weight-gradient jobs.
void run_wgrad_jobs(Exec& ex, std::vector<WgradJob>& jobs);

}  // namespace mplan::exec
