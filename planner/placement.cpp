// Allocation-free group placement (see placement.h).
#include "planner/placement.h"

#include <algorithm>
#include <cstdint>

namespace mplan::planner {

GroupPlacement fast_placement(int tp, int cp, int dp, int pp, int etp, int ep, Dim d, int domain) {
  const bool expert = d == Dim::etp || d == Dim::ep || d == Dim::edp;
  const int edp = (tp * cp * dp) / (etp * ep);
  const int sizes_dense[4] = {tp, cp, dp, pp}, sizes_expert[4] = {etp, ep, edp, pp};
  const Dim order_dense[4] = {Dim::tp, Dim::cp, Dim::dp, Dim::pp}, order_expert[4] = {Dim::etp, Dim::ep, Dim::edp, Dim::pp};
  const int* sizes = expert ? sizes_expert : sizes_dense;
  const Dim* order = expert ? order_expert : order_dense;
  int64_t stride = 1;
  int n = 1;
  for (int i = 0; i < 4; ++i) {
    if (order[i] == d) {
      n = sizes[i];
      break;
    }
    stride *= sizes[i];
  }
  const int64_t world = int64_t(tp) * cp * dp * pp;
  const int64_t dom = std::max(1, domain);
  const int samples = int(std::min<int64_t>(world, 16));
  GroupPlacement worst;
  for (int i = 0; i < samples; ++i) {
    int64_t rank = (world * i) / samples;
    int64_t idx = (rank / stride) % n;
    int64_t base = rank - idx * stride;
    GroupPlacement p;
    p.size = n;
    if (stride >= dom) {  // consecutive members are at least a domain apart: one per domain
      p.domains = n;
      p.max_per_domain = 1;
      p.uniform = true;
    } else {
      // members are increasing ranks, so each domain is one run; walk domain boundaries without dividing
      p.domains = 0;
      p.max_per_domain = 0;
      int64_t r = base, boundary = (base / dom + 1) * dom;
      int run = 0, min_run = n + 1;
      for (int k = 0; k < n; ++k, r += stride) {
        if (r >= boundary) {
          ++p.domains;
          p.max_per_domain = std::max(p.max_per_domain, run);
          min_run = std::min(min_run, run);
          run = 0;
          boundary = (r / dom + 1) * dom;
        }
        ++run;
      }
      ++p.domains;
      p.max_per_domain = std::max(p.max_per_domain, run);
      min_run = std::min(min_run, run);
      p.uniform = min_run == p.max_per_domain;
    }
    if (i == 0 || p.domains > worst.domains || (p.domains == worst.domains && !p.uniform)) worst = p;
  }
  return worst;
}

}  // namespace mplan::planner
