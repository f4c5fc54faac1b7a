// All-to-all(v) dispatch/combine over the ep group and the etp gather/reduce-scatter.
#include "executor/parallel/ep_dispatch.h"

namespace mplan::exec {

EpRouting ep_plan(Exec& ex, const std::vector<int64_t>& cnt) {
  const LayoutDims& d = ex.d;
  EpRouting r;
  std::vector<int64_t> recv_cnt;  // (ep * E_l): rows from source s for local expert i
  {
    OpTimers::Scope t(ex.timers, "dispatch_a2a");
    if (d.ep > 1)
      ex.g.ep->all_to_all_counts(cnt, recv_cnt);
    else
      recv_cnt = cnt;
  }
  r.send_rows.assign(size_t(d.ep), 0);
  r.recv_rows.assign(size_t(d.ep), 0);
  for (int p = 0; p < d.ep; ++p)
    for (int64_t i = 0; i < d.E_l; ++i) {
      r.send_rows[size_t(p)] += cnt[size_t(p * d.E_l + i)];
      r.recv_rows[size_t(p)] += recv_cnt[size_t(p * d.E_l + i)];
    }
  for (int p = 0; p < d.ep; ++p) {
    r.R += r.send_rows[size_t(p)];
    r.Rr += r.recv_rows[size_t(p)];
  }
  for (int s = 0; s < d.ep; ++s)
    for (int64_t i = 0; i < d.E_l; ++i)
      for (int64_t k = 0; k < recv_cnt[size_t(s * d.E_l + i)]; ++k) r.recv_expert.push_back(int32_t(i));
  // the etp members' count matrices, to find each expert's rows in the gathered block
  std::vector<int64_t> all_cnt = recv_cnt;
  if (d.etp > 1) {
    OpTimers::Scope t(ex.timers, "etp_allgather");
    all_cnt = ex.g.etp->all_gather_counts(recv_cnt);
  }
  r.expert_rows.assign(size_t(d.E_l), {});
  r.etp_rows.assign(size_t(d.etp), 0);
  int64_t row = 0;
  for (int q = 0; q < d.etp; ++q)
    for (int s = 0; s < d.ep; ++s)
      for (int64_t i = 0; i < d.E_l; ++i) {
        int64_t c = all_cnt[size_t((int64_t(q) * d.ep + s) * d.E_l + i)];
        for (int64_t k = 0; k < c; ++k) r.expert_rows[size_t(i)].push_back(int32_t(row++));
        r.etp_rows[size_t(q)] += c;
      }
  r.Rg = row;
  return r;
}

namespace {

std::vector<int64_t> times(const std::vector<int64_t>& v, int64_t c) {
  std::vector<int64_t> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = v[i] * c;
  return o;
}

Tensor a2a(Exec& ex, const char* op, const Tensor& x, const std::vector<int64_t>& send_rows,
           const std::vector<int64_t>& recv_rows, int64_t out_rows) {
  const int64_t C = ex.d.C;
  if (ex.d.ep == 1) return x;
  OpTimers::Scope t(ex.timers, op);
  Tensor y = ex.alloc({out_rows, C});
  ex.g.ep->all_to_all_v(x.data(), times(send_rows, C), y.data(), times(recv_rows, C));
  return y;
}

// The expert-TP ranks' rows (their counts etp_rows): all-gathered from this rank's (Rr, C) into
// (Rg, C), or the partial sums (Rg, C) reduce-scattered back to (Rr, C); as is without etp.
Tensor etp_exchange(Exec& ex, const EpRouting& r, const Tensor& x, bool gather) {
  if (ex.d.etp == 1) return x;
  OpTimers::Scope t(ex.timers, gather ? "etp_allgather" : "etp_reduce_scatter");
  Tensor y = ex.alloc({gather ? r.Rg : r.Rr, ex.d.C});
  if (gather)
    ex.g.etp->all_gather_v(x.data(), y.data(), times(r.etp_rows, ex.d.C));
  else
    ex.g.etp->reduce_scatter_v(x.data(), y.data(), times(r.etp_rows, ex.d.C));
  return y;
}

}  // namespace

Tensor ep_dispatch_forward(Exec& ex, const EpRouting& r, const Tensor& xs) {
  return etp_exchange(ex, r, a2a(ex, "dispatch_a2a", xs, r.send_rows, r.recv_rows, r.Rr), true);
}

Tensor ep_combine_reduce(Exec& ex, const EpRouting& r, const Tensor& yg) { return etp_exchange(ex, r, yg, false); }

Tensor ep_combine_forward(Exec& ex, const EpRouting& r, const Tensor& yr) {
  return a2a(ex, "combine_a2a", yr, r.recv_rows, r.send_rows, r.R);
}

Tensor ep_combine_backward(Exec& ex, const EpRouting& r, const Tensor& dys) {
  return a2a(ex, "combine_a2a", dys, r.send_rows, r.recv_rows, r.Rr);
}

Tensor ep_combine_reduce_backward(Exec& ex, const EpRouting& r, const Tensor& dyr) { return etp_exchange(ex, r, dyr, true); }

Tensor ep_dispatch_backward(Exec& ex, const EpRouting& r, const Tensor& dxg) {
  return a2a(ex, "dispatch_a2a", etp_exchange(ex, r, dxg, false), r.recv_rows, r.send_rows, r.R);
}

}  // namespace mplan::exec
