// CPU attention core, flash style: queries in tiles of 64, keys in tiles of 128; each tile's scores
// S = Q K^T come from one sgemm, are masked by global position (key j visible to query i when
// kpos[j] <= qpos[i]), turned into probabilities with an online softmax and multiplied into V by a
// second sgemm. Only the output and the log-sum-exp per row are kept; the backward recomputes the
// probabilities tile by tile. The same kernel serves a whole sequence and the key blocks of
// context-parallel ring attention (merge = combine with the running out/lse).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "executor/backend/cpu/cpu_backend.h"
#include "executor/backend/kernel_math.h"

namespace mplan::exec {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kTileQ = 64, kTileK = 128;

// S (bq, bk) = scale * Q_tile K_tile^T, masked entries -inf; returns false when fully masked.
bool scores(float* S, const float* q, int64_t ldq, const float* k, int64_t ldk, int64_t bq, int64_t bk, int64_t D, float scale,
            const int32_t* qpos, const int32_t* kpos) {
  int32_t qmax = qpos[0], kmin = kpos[0];
  for (int64_t i = 1; i < bq; ++i) qmax = std::max(qmax, qpos[i]);
  for (int64_t j = 1; j < bk; ++j) kmin = std::min(kmin, kpos[j]);
  if (kmin > qmax) return false;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(bq), int(bk), int(D), scale, q, int(ldq), k, int(ldk), 0.0f, S,
              int(bk));
  for (int64_t i = 0; i < bq; ++i)
    for (int64_t j = 0; j < bk; ++j)
      if (!km::attn_visible(kpos[j], qpos[i])) S[i * bk + j] = kNegInf;
  return true;
}

}  // namespace

// q (B, Tq, Hq, D), k (B, Tk, Hkv, D), v (B, Tk, Hkv, Dv) -> out (B, Tq, Hq, Dv), lse (B, Hq, Tq)
void CpuBackend::attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, const int32_t* qpos,
                                   const int32_t* kpos, const AttnShape& s, bool merge) {
  const int64_t group = s.Hq / s.Hkv, ldq = s.Hq * s.D, ldk = s.Hkv * s.D, ldv = s.Hkv * s.Dv, ldo = s.Hq * s.Dv;
  std::vector<float> S(static_cast<size_t>(kTileQ * kTileK)), acc(static_cast<size_t>(kTileQ * s.Dv)),
      m(static_cast<size_t>(kTileQ)), l(static_cast<size_t>(kTileQ));
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.Hq; ++h) {
      const int64_t hk = h / group;
      const float* qh = q + (b * s.Tq * s.Hq + h) * s.D;
      const float* kh = k + (b * s.Tk * s.Hkv + hk) * s.D;
      const float* vh = v + (b * s.Tk * s.Hkv + hk) * s.Dv;
      float* oh = out + (b * s.Tq * s.Hq + h) * s.Dv;
      float* lh = lse + (b * s.Hq + h) * s.Tq;
      for (int64_t i0 = 0; i0 < s.Tq; i0 += kTileQ) {
        const int64_t bq = std::min(kTileQ, s.Tq - i0);
        std::fill(m.begin(), m.end(), kNegInf);
        std::fill(l.begin(), l.end(), 0.0f);
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j0 = 0; j0 < s.Tk; j0 += kTileK) {
          const int64_t bk = std::min(kTileK, s.Tk - j0);
          if (!scores(S.data(), qh + i0 * ldq, ldq, kh + j0 * ldk, ldk, bq, bk, s.D, s.scale, qpos + i0, kpos + j0)) continue;
          for (int64_t i = 0; i < bq; ++i) {  // online softmax, row by row
            float* Si = S.data() + i * bk;
            float mt = kNegInf;
            for (int64_t j = 0; j < bk; ++j) mt = Si[j] > mt ? Si[j] : mt;
            const float mn = std::max(m[size_t(i)], mt);
            if (mn == kNegInf) {
              std::fill(Si, Si + bk, 0.0f);
              continue;
            }
            const float corr = km::vexp(m[size_t(i)] - mn);
            float sum = 0;
            for (int64_t j = 0; j < bk; ++j) {
              Si[j] = km::vexp(Si[j] - mn);
              sum += Si[j];
            }
            l[size_t(i)] = l[size_t(i)] * corr + sum;
            m[size_t(i)] = mn;
            if (corr != 1.0f)
              for (int64_t d = 0; d < s.Dv; ++d) acc[size_t(i * s.Dv + d)] *= corr;
          }
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(bq), int(s.Dv), int(bk), 1.0f, S.data(), int(bk),
                      vh + j0 * ldv, int(ldv), 1.0f, acc.data(), int(s.Dv));
        }
        for (int64_t i = 0; i < bq; ++i) {
          float* oi = oh + (i0 + i) * ldo;
          float& li = lh[i0 + i];
          const float* ai = acc.data() + i * s.Dv;
          if (l[size_t(i)] == 0.0f) {  // no visible key in this block
            if (!merge) {
              std::fill(oi, oi + s.Dv, 0.0f);
              li = kNegInf;
            }
            continue;
          }
          const float lb = m[size_t(i)] + std::log(l[size_t(i)]), inv = 1.0f / l[size_t(i)];
          if (!merge || li == kNegInf) {
            for (int64_t d = 0; d < s.Dv; ++d) oi[d] = ai[d] * inv;
            li = lb;
          } else {  // merge two partial softmax results
            float wa, wb;
            const float lnew = km::lse_merge(li, lb, inv, &wa, &wb);
            for (int64_t d = 0; d < s.Dv; ++d) oi[d] = oi[d] * wa + ai[d] * wb;
            li = lnew;
          }
        }
      }
    }
}

// delta (B, Hq, Tq) = sum_d dout * out
void CpuBackend::attention_backward_prepare(float* delta, const float* dout, const float* out, const AttnShape& s) {
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.Hq; ++h)
      for (int64_t i = 0; i < s.Tq; ++i) {
        const int64_t off = ((b * s.Tq + i) * s.Hq + h) * s.Dv;
        float acc = 0;
        for (int64_t d = 0; d < s.Dv; ++d) acc += dout[off + d] * out[off + d];
        delta[(b * s.Hq + h) * s.Tq + i] = acc;
      }
}

// Per tile: P = exp(S - lse); dV += P^T dO; dP = dO V^T; dS = P (dP - delta) scale;
// dQ += dS K; dK += dS^T Q
void CpuBackend::attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* lse, const float* delta,
                                    const float* q, const float* k, const float* v, const int32_t* qpos, const int32_t* kpos,
                                    const AttnShape& s) {
  const int64_t group = s.Hq / s.Hkv, ldq = s.Hq * s.D, ldk = s.Hkv * s.D, ldv = s.Hkv * s.Dv, ldo = s.Hq * s.Dv;
  std::vector<float> P(static_cast<size_t>(kTileQ * kTileK)), dP(static_cast<size_t>(kTileQ * kTileK));
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.Hq; ++h) {
      const int64_t hk = h / group;
      const float* qh = q + (b * s.Tq * s.Hq + h) * s.D;
      float* dqh = dq + (b * s.Tq * s.Hq + h) * s.D;
      const float* kh = k + (b * s.Tk * s.Hkv + hk) * s.D;
      float* dkh = dk + (b * s.Tk * s.Hkv + hk) * s.D;
      const float* vh = v + (b * s.Tk * s.Hkv + hk) * s.Dv;
      float* dvh = dv + (b * s.Tk * s.Hkv + hk) * s.Dv;
      const float* doh = dout + (b * s.Tq * s.Hq + h) * s.Dv;
      const float* lh = lse + (b * s.Hq + h) * s.Tq;
      const float* dh = delta + (b * s.Hq + h) * s.Tq;
      for (int64_t i0 = 0; i0 < s.Tq; i0 += kTileQ) {
        const int64_t bq = std::min(kTileQ, s.Tq - i0);
        for (int64_t j0 = 0; j0 < s.Tk; j0 += kTileK) {
          const int64_t bk = std::min(kTileK, s.Tk - j0);
          if (!scores(P.data(), qh + i0 * ldq, ldq, kh + j0 * ldk, ldk, bq, bk, s.D, s.scale, qpos + i0, kpos + j0)) continue;
          for (int64_t i = 0; i < bq; ++i) {
            float* Pi = P.data() + i * bk;
            const float li = lh[i0 + i];
            if (li == kNegInf) {
              std::fill(Pi, Pi + bk, 0.0f);
              continue;
            }
            for (int64_t j = 0; j < bk; ++j) Pi[j] = km::vexp(Pi[j] - li);
          }
          // dV (bk, Dv) += P^T (bk, bq) @ dO (bq, Dv)
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(bk), int(s.Dv), int(bq), 1.0f, P.data(), int(bk),
                      doh + i0 * ldo, int(ldo), 1.0f, dvh + j0 * ldv, int(ldv));
          // dP (bq, bk) = dO (bq, Dv) @ V^T
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(bq), int(bk), int(s.Dv), 1.0f, doh + i0 * ldo, int(ldo),
                      vh + j0 * ldv, int(ldv), 0.0f, dP.data(), int(bk));
          for (int64_t i = 0; i < bq; ++i) {
            const float di = dh[i0 + i];
            float* Pi = P.data() + i * bk;
            const float* dPi = dP.data() + i * bk;
            for (int64_t j = 0; j < bk; ++j) Pi[j] = km::attn_dscore(Pi[j], dPi[j], di, s.scale);  // P becomes dS
          }
          // dQ (bq, D) += dS @ K ; dK (bk, D) += dS^T @ Q
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(bq), int(s.D), int(bk), 1.0f, P.data(), int(bk),
                      kh + j0 * ldk, int(ldk), 1.0f, dqh + i0 * ldq, int(ldq));
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(bk), int(s.D), int(bq), 1.0f, P.data(), int(bk), qh + i0 * ldq,
                      int(ldq), 1.0f, dkh + j0 * ldk, int(ldk));
        }
      }
    }
}

}  // namespace mplan::exec
