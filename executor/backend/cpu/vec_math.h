// Branch-free fp32 exp for the CPU kernels' inner loops: the compiler vectorises loops that call it
// (glibc's expf is a library call that blocks vectorisation without -ffast-math). Cody-Waite range
// reduction x = n ln2 + r and a degree-6 polynomial for e^r: relative error below 2 ulp over the
// whole range; +-inf and NaN pass through (NaN losses must stay NaN), underflow flushes to 0.
#pragma once
#include <cstdint>
#include <cstring>

namespace mplan::exec {

inline float vexp(float x) {
  const float hi = 88.72283935546875f, lo = -103.972084045410f;
  float xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  const float log2e = 1.44269504088896341f;
  // round to nearest with the 1.5 * 2^23 trick (vectorises without SSE4.1 roundps)
  const float magic = 12582912.0f;
  float n = (xc * log2e + magic) - magic;
  // r = x - n ln2 in two steps (ln2 split into a short high part and a correction)
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n in two halves so that n down to -150 (denormal results) stays representable
  int32_t ni = int32_t(n);
  int32_t n1 = ni / 2, n2 = ni - n1;
  int32_t b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  float y = p * s1 * s2;
  y = x > hi ? __builtin_inff() : y;
  y = x < lo ? 0.0f : y;
  return x != x ? x : y;
}

}  // namespace mplan::exec
