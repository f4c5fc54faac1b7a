// Linear-layer backward with optional weight-gradient deferral (zero-bubble B/W split).
#include "executor/model/exec.h"

namespace mplan::exec {

void linear_backward(Exec& ex, const char* op, float* dinp, bool accumulate, const Tensor& dout_t, const float* dout,
                     const Tensor& inp_t, const float* inp, int w, int b, int64_t M, int64_t K, int64_t N) {
  OpTimers::Scope t(ex.timers, op);
  float* dw = ex.ps.g(w);
  float* db = b >= 0 ? ex.ps.g(b) : nullptr;
  if (ex.defer) {
    if (dinp) ex.be.matmul_backward_input(dinp, dout, ex.ps.w(w), M, K, N, accumulate);
    ex.defer->push_back(WgradJob{dw, db, dout, inp, M, K, N, dout_t, inp_t, op});
    return;
  }
  ex.be.matmul_backward(dinp, accumulate, dw, db, dout, ex.ps.w(w), inp, M, K, N);
}

void run_wgrad_jobs(Exec& ex, std::vector<WgradJob>& jobs) {
  for (WgradJob& j : jobs) {
    OpTimers::Scope t(ex.timers, j.op);
    ex.be.matmul_backward_weight(j.dw, j.db, j.dout, j.inp, j.M, j.K, j.N);
  }
  jobs.clear();
}

}  // namespace mplan::exec
