// The attention half of a transformer layer, named by the op vocabulary:
//   attn_norm -> [tp_allgather] -> qkv_gemm -> (q/k norm) -> rope -> attn_core [cp_kv_exchange]
//   -> proj_gemm -> [tp_allreduce | tp_reduce_scatter] -> attn_residual
// Q/K/V are column parallel (heads split over tp), the output projection row parallel.
#pragma once
#include "executor/model/micro.h"
#include "executor/model/norm.h"

namespace mplan::exec {

struct AttnParams {
  NormParams norm;
  int wq = -1, wk = -1, wv = -1, bq = -1, bk = -1, bv = -1;  // (Hq_l*D, C), (Hkv_l*D, C)
  int wo = -1, bo = -1;                                      // (C, Hq_l*D), (C)
  NormParams q_norm, k_norm;                                 // (D), with qk_layernorm
};

struct AttnActs {
  NormActs norm;
  Tensor h;                 // (N, C) input of the QKV GEMMs (gathered over tp with sp)
  NormActs q_norm, k_norm;  // (N*Hq_l, D), (N*Hkv_l, D)
  Tensor q, k, v;           // (N, H_l, D) as fed to attn_core (after norm and rope)
  Tensor a, lse;            // (N, Hq_l, D), (B, Hq_l, Tl)
};

void register_attention(ParamStore& ps, const LayoutDims& d, int layer, AttnParams& p);
// x (Nsp, C) -> x + attention(x)
Tensor attention_forward(Exec& ex, const AttnParams& p, const Micro& mb, const Tensor& x, AttnActs& a);
// dy (Nsp, C) -> dx (Nsp, C); parameter gradients accumulate
Tensor attention_backward(Exec& ex, const AttnParams& p, const Micro& mb, const Tensor& dy, AttnActs& a);

}  // namespace mplan::exec
