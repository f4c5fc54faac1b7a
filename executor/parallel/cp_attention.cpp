// Ring attention over the context-parallel group (forward and backward), flash-style blocks.
#include "executor/parallel/cp_attention.h"

#include <cmath>
#include <utility>

namespace mplan::exec {

namespace {

Backend::AttnShape shape_of(const LayoutDims& d) {
  Backend::AttnShape s;
  s.B = d.B;
  s.Tq = d.Tl;
  s.Tk = d.Tl;
  s.Hq = d.Hq_l;
  s.Hkv = d.Hkv_l;
  s.D = d.D;
  s.Dv = d.D;
  s.scale = 1.0f / std::sqrt(float(d.D));
  return s;
}

constexpr int kRingTag = 71;

}  // namespace

void attn_core_forward(Exec& ex, const Micro& mb, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& a, Tensor& lse) {
  const LayoutDims& d = ex.d;
  const Backend::AttnShape s = shape_of(d);
  a = ex.alloc({d.N, d.Hq_l * d.D});
  lse = ex.alloc({d.B, d.Hq_l, d.Tl});
  if (d.cp == 1) {
    OpTimers::Scope t(ex.timers, "attn_core");
    ex.be.attention_forward(a.data(), lse.data(), q.data(), k.data(), v.data(), mb.seq_pos.data(), mb.seq_pos.data(), s, false);
    return;
  }
  const int64_t nkv = k.numel();
  Tensor cur = ex.alloc({2 * nkv}), nxt = ex.alloc({2 * nkv});
  ex.be.copy(cur.data(), k.data(), nkv);
  ex.be.copy(cur.data() + nkv, v.data(), nkv);
  const int r = d.cp_rank, next = (r + 1) % d.cp, prev = (r - 1 + d.cp) % d.cp;
  for (int i = 0; i < d.cp; ++i) {
    std::vector<int32_t> kpos = d.local_positions((r - i + d.cp) % d.cp);
    {
      OpTimers::Scope t(ex.timers, "attn_core");
      ex.be.attention_forward(a.data(), lse.data(), q.data(), cur.data(), cur.data() + nkv, mb.seq_pos.data(), kpos.data(), s,
                              i > 0);
    }
    if (i + 1 < d.cp) {
      OpTimers::Scope t(ex.timers, "cp_kv_exchange");
      ex.g.cp->sendrecv(cur.data(), 2 * nkv, next, nxt.data(), 2 * nkv, prev, kRingTag);
      std::swap(cur, nxt);
    }
  }
}

void attn_core_backward(Exec& ex, const Micro& mb, const Tensor& da, const Tensor& a, const Tensor& lse, const Tensor& q,
                        const Tensor& k, const Tensor& v, Tensor& dq, Tensor& dk, Tensor& dv) {
  const LayoutDims& d = ex.d;
  const Backend::AttnShape s = shape_of(d);
  const int64_t nkv = k.numel();
  dq = ex.alloc({d.N, d.Hq_l * d.D});
  Tensor delta = ex.alloc({d.B, d.Hq_l, d.Tl});
  {
    OpTimers::Scope t(ex.timers, "attn_core");
    ex.be.attention_backward_prepare(delta.data(), da.data(), a.data(), s);
  }
  // ring buffer: [k | v | dk | dv]
  Tensor cur = ex.alloc({4 * nkv});
  ex.be.copy(cur.data(), k.data(), nkv);
  ex.be.copy(cur.data() + nkv, v.data(), nkv);
  Tensor nxt = d.cp > 1 ? ex.alloc({4 * nkv}) : Tensor();
  const int r = d.cp_rank, next = (r + 1) % d.cp, prev = (r - 1 + d.cp) % d.cp;
  for (int i = 0; i < d.cp; ++i) {
    std::vector<int32_t> kpos = d.local_positions((r - i + d.cp) % d.cp);
    {
      OpTimers::Scope t(ex.timers, "attn_core");
      ex.be.attention_backward(dq.data(), cur.data() + 2 * nkv, cur.data() + 3 * nkv, da.data(), lse.data(), delta.data(),
                               q.data(), cur.data(), cur.data() + nkv, mb.seq_pos.data(), kpos.data(), s);
    }
    if (d.cp > 1) {
      OpTimers::Scope t(ex.timers, "cp_kv_exchange");
      if (i + 1 < d.cp) {
        ex.g.cp->sendrecv(cur.data(), 4 * nkv, next, nxt.data(), 4 * nkv, prev, kRingTag);
      } else {  // last hop: only the gradients go home
        ex.g.cp->sendrecv(cur.data() + 2 * nkv, 2 * nkv, next, nxt.data() + 2 * nkv, 2 * nkv, prev, kRingTag);
      }
      std::swap(cur, nxt);
    }
  }
  dk = ex.alloc({d.N, d.Hkv_l * d.D});
  dv = ex.alloc({d.N, d.Hkv_l * d.D});
  ex.be.copy(dk.data(), cur.data() + 2 * nkv, nkv);
  ex.be.copy(dv.data(), cur.data() + 3 * nkv, nkv);
}

}  // namespace mplan::exec
