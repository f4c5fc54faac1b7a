// Vocabulary-parallel embedding lookup and softmax cross-entropy.
#include "executor/parallel/vocab_parallel.h"

#include <cmath>
#include <vector>

#include "executor/parallel/tp_regions.h"

namespace mplan::exec {

Tensor vocab_parallel_embedding_forward(Exec& ex, int wte, const Micro& mb) {
  const LayoutDims& d = ex.d;
  Tensor e = ex.alloc({d.N, d.C});
  {
    OpTimers::Scope t(ex.timers, "embedding");
    ex.be.embedding_forward(e.data(), mb.tokens.data(), ex.ps.w(wte), d.N, d.C, d.vstart, d.v_valid);
  }
  return tp_exit_forward(ex, std::move(e), d.C);
}

void vocab_parallel_embedding_backward(Exec& ex, int wte, const Micro& mb, const Tensor& dx) {
  const LayoutDims& d = ex.d;
  Tensor dfull = tp_exit_backward(ex, dx, d.C);
  OpTimers::Scope t(ex.timers, "embedding");
  ex.be.embedding_backward(ex.ps.g(wte), dfull.data(), mb.tokens.data(), d.N, d.C, d.vstart, d.v_valid);
}

double vocab_parallel_xent_forward(Exec& ex, const Micro& mb, XentState& s) {
  const LayoutDims& d = ex.d;
  const int64_t N = d.N;
  s.gmax = ex.alloc({N});
  s.gsumexp = ex.alloc({N});
  Tensor tl = ex.alloc({N});
  Tensor both = ex.alloc({2 * N});
  {
    OpTimers::Scope t(ex.timers, "cross_entropy");
    ex.be.xent_rowmax(s.gmax.data(), s.logits.data(), N, d.V_l, d.v_valid);
  }
  if (d.tp > 1) {
    OpTimers::Scope t(ex.timers, "tp_allreduce");
    ex.g.tp->all_reduce_max(s.gmax.data(), N);
  }
  {
    OpTimers::Scope t(ex.timers, "cross_entropy");
    ex.be.xent_sumexp_target(both.data(), both.data() + N, s.logits.data(), s.gmax.data(), mb.targets.data(), N, d.V_l, d.v_valid,
                             d.vstart);
  }
  if (d.tp > 1) {
    OpTimers::Scope t(ex.timers, "tp_allreduce");
    ex.g.tp->all_reduce_sum(both.data(), 2 * N);
  }
  OpTimers::Scope t(ex.timers, "cross_entropy");
  ex.be.copy(s.gsumexp.data(), both.data(), N);
  std::vector<float> h(size_t(3 * N));  // sumexp, target logit, max
  ex.be.download(h.data(), both.data(), 2 * N);
  ex.be.download(h.data() + 2 * N, s.gmax.data(), N);
  double sum = 0;
  for (int64_t n = 0; n < N; ++n) sum += double(std::log(h[size_t(n)]) + h[size_t(2 * N + n)] - h[size_t(N + n)]);
  return sum;
}

void vocab_parallel_xent_backward(Exec& ex, const Micro& mb, XentState& s, float dloss) {
  const LayoutDims& d = ex.d;
  OpTimers::Scope t(ex.timers, "cross_entropy");
  std::vector<float> dl(size_t(d.N), dloss);
  ex.be.xent_backward(s.logits.data(), s.gmax.data(), s.gsumexp.data(), mb.targets.data(), dl.data(), d.N, d.V_l, d.v_valid,
                      d.vstart);
}

}  // namespace mplan::exec
