// CPU attention core, flash style: per query row, scores over one key block are formed, reduced to
// (max, sum) and discarded; only out and the log-sum-exp are kept. Causality is by global position,
// so the same kernel serves one whole sequence and the blocks of context-parallel ring attention.
#include <cmath>
#include <limits>
#include <vector>

#include "executor/backend/cpu/cpu_backend.h"

namespace mplan::exec {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline float dot(const float* a, const float* b, int64_t n) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}
}  // namespace

// q (B, Tq, Hq, D), k (B, Tk, Hkv, D), v (B, Tk, Hkv, Dv) -> out (B, Tq, Hq, Dv), lse (B, Hq, Tq)
void CpuBackend::attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                                   const int32_t* qpos, const int32_t* kpos, const AttnShape& s, bool merge) {
  const int64_t group = s.Hq / s.Hkv;
  std::vector<float> sc(size_t(s.Tk));
  std::vector<float> acc(size_t(s.Dv));
  for (int64_t b = 0; b < s.B; ++b) {
    for (int64_t h = 0; h < s.Hq; ++h) {
      const int64_t hk = h / group;
      for (int64_t i = 0; i < s.Tq; ++i) {
        const float* qi = q + ((b * s.Tq + i) * s.Hq + h) * s.D;
        float* oi = out + ((b * s.Tq + i) * s.Hq + h) * s.Dv;
        float& li = lse[(b * s.Hq + h) * s.Tq + i];
        float m = kNegInf;
        for (int64_t j = 0; j < s.Tk; ++j) {
          if (kpos[j] > qpos[i]) {
            sc[size_t(j)] = kNegInf;
            continue;
          }
          float x = s.scale * dot(qi, k + ((b * s.Tk + j) * s.Hkv + hk) * s.D, s.D);
          sc[size_t(j)] = x;
          if (x > m) m = x;
        }
        if (m == kNegInf) {  // no visible key in this block
          if (!merge) {
            for (int64_t d = 0; d < s.Dv; ++d) oi[d] = 0;
            li = kNegInf;
          }
          continue;
        }
        float sum = 0;
        for (int64_t d = 0; d < s.Dv; ++d) acc[size_t(d)] = 0;
        for (int64_t j = 0; j < s.Tk; ++j) {
          if (sc[size_t(j)] == kNegInf) continue;
          float p = std::exp(sc[size_t(j)] - m);
          sum += p;
          const float* vj = v + ((b * s.Tk + j) * s.Hkv + hk) * s.Dv;
          for (int64_t d = 0; d < s.Dv; ++d) acc[size_t(d)] += p * vj[d];
        }
        float lb = m + std::log(sum);
        float inv = 1.0f / sum;
        if (!merge || li == kNegInf) {
          for (int64_t d = 0; d < s.Dv; ++d) oi[d] = acc[size_t(d)] * inv;
          li = lb;
        } else {  // online-softmax merge of two partial results
          float mx = li > lb ? li : lb;
          float lnew = mx + std::log(std::exp(li - mx) + std::exp(lb - mx));
          float wa = std::exp(li - lnew), wb = std::exp(lb - lnew) * inv;
          for (int64_t d = 0; d < s.Dv; ++d) oi[d] = oi[d] * wa + acc[size_t(d)] * wb;
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
        delta[(b * s.Hq + h) * s.Tq + i] = dot(dout + off, out + off, s.Dv);
      }
}

// p = exp(s - lse); dv += p dout; ds = p (dout.v - delta); dq += scale ds k; dk += scale ds q
void CpuBackend::attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* lse,
                                    const float* delta, const float* q, const float* k, const float* v,
                                    const int32_t* qpos, const int32_t* kpos, const AttnShape& s) {
  const int64_t group = s.Hq / s.Hkv;
  for (int64_t b = 0; b < s.B; ++b) {
    for (int64_t h = 0; h < s.Hq; ++h) {
      const int64_t hk = h / group;
      for (int64_t i = 0; i < s.Tq; ++i) {
        const float li = lse[(b * s.Hq + h) * s.Tq + i];
        if (li == kNegInf) continue;
        const float di = delta[(b * s.Hq + h) * s.Tq + i];
        const float* qi = q + ((b * s.Tq + i) * s.Hq + h) * s.D;
        float* dqi = dq + ((b * s.Tq + i) * s.Hq + h) * s.D;
        const float* doi = dout + ((b * s.Tq + i) * s.Hq + h) * s.Dv;
        for (int64_t j = 0; j < s.Tk; ++j) {
          if (kpos[j] > qpos[i]) continue;
          const int64_t koff = ((b * s.Tk + j) * s.Hkv + hk);
          const float* kj = k + koff * s.D;
          const float* vj = v + koff * s.Dv;
          float p = std::exp(s.scale * dot(qi, kj, s.D) - li);
          float dp = dot(doi, vj, s.Dv);
          float ds = p * (dp - di) * s.scale;
          float* dvj = dv + koff * s.Dv;
          for (int64_t d = 0; d < s.Dv; ++d) dvj[d] += p * doi[d];
          float* dkj = dk + koff * s.D;
          for (int64_t d = 0; d < s.D; ++d) {
            dqi[d] += ds * kj[d];
            dkj[d] += ds * qi[d];
          }
        }
      }
    }
  }
}

}  // namespace mplan::exec
