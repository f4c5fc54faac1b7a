// Every Backend op on the CUDA backend against the CPU backend (the fp32 oracle), ggml style: random
// inputs, per-op tolerances, and sentinel guards (64 NaN-payload floats) on both sides of every
// output buffer, so an out-of-bounds write fails the op that made it. GEMMs are also checked in bf16
// mode against the CPU on bf16-rounded operands, including the AdamW working-copy path.
// Needs a CUDA device: exits 77 (ctest: skipped) without one.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>

#include "executor/backend/backend_factory.h"
#include "executor/backend/cpu/cpu_backend.h"
#include "executor/backend/cuda/cuda_backend.h"
#include "executor/backend/kernel_math.h"
#include "executor/model/params.h"
#include "gpu_test_main.h"
#include "tests/random_values.h"

using namespace mplan::exec;

namespace {

constexpr int64_t kGuard = 64;
constexpr uint32_t kSentinel = 0x7fc0beefu;

CpuBackend* g_cpu = nullptr;
CudaBackend* g_gpu = nullptr;       // fp32 GEMMs
CudaBackend* g_gpu_bf16 = nullptr;  // bf16 GEMMs

using mplan::test::randv;
std::vector<int32_t> randi(int64_t n, uint32_t seed, int32_t lo, int32_t hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> u(lo, hi);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& x : v) x = u(rng);
  return v;
}

// A device buffer with sentinel guards on both sides (device memory: filled and read through the
// backend's upload/download).
class Dev {
 public:
  Dev(CudaBackend& be, const std::vector<float>& init) : be_(&be), n_(int64_t(init.size())) {
    t_ = be.alloc({n_ + 2 * kGuard});
    std::vector<float> h(static_cast<size_t>(n_ + 2 * kGuard));
    for (int64_t i = 0; i < kGuard; ++i) {
      std::memcpy(&h[size_t(i)], &kSentinel, 4);
      std::memcpy(&h[size_t(kGuard + n_ + i)], &kSentinel, 4);
    }
    if (n_ > 0) std::memcpy(&h[size_t(kGuard)], init.data(), init.size() * sizeof(float));
    be.upload(t_.data(), h.data(), int64_t(h.size()));
  }
  Dev(CudaBackend& be, int64_t n) : Dev(be, std::vector<float>(static_cast<size_t>(n), 0.0f)) {}
  float* p() { return t_.data() + kGuard; }
  std::vector<float> all() const {
    std::vector<float> h(static_cast<size_t>(n_ + 2 * kGuard));
    be_->download(h.data(), t_.data(), int64_t(h.size()));
    return h;
  }
  std::vector<float> vec() const {
    std::vector<float> h = all();
    return std::vector<float>(h.begin() + kGuard, h.begin() + kGuard + n_);
  }
  bool guards_ok() const {
    std::vector<float> h = all();
    for (int64_t i = 0; i < kGuard; ++i) {
      uint32_t a, b;
      std::memcpy(&a, &h[size_t(i)], 4);
      std::memcpy(&b, &h[size_t(kGuard + n_ + i)], 4);
      if (a != kSentinel || b != kSentinel) return false;
    }
    return true;
  }

 private:
  CudaBackend* be_;
  int64_t n_;
  Tensor t_;
};

void expect_close(const char* what, const std::vector<float>& got, const std::vector<float>& want, double rtol, double atol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(w) || std::isinf(w)) {
      EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << what << "[" << i << "] " << g << " vs " << w;
      continue;
    }
    const double excess = std::fabs(g - w) - (atol + rtol * std::fabs(w));
    if (!(excess <= worst)) worst = std::isnan(excess) ? 1e300 : excess, at = i;
  }
  EXPECT_LE(worst, 0.0) << what << ": worst at [" << at << "] got " << got[at] << " want " << want[at] << " (rtol " << rtol
                        << ", atol " << atol << ")";
}

#define EXPECT_GUARDS(d) EXPECT_TRUE((d).guards_ok()) << #d << ": write outside the output"

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST(BackendOps, Elementwise) {
  const int64_t n = 10007;
  auto a = randv(n, 1), b = randv(n, 2);
  Dev da(*g_gpu, a), db(*g_gpu, b), out(*g_gpu, n);
  g_gpu->add(out.p(), da.p(), db.p(), n);
  std::vector<float> ref(static_cast<size_t>(n));
  g_cpu->add(ref.data(), a.data(), b.data(), n);
  expect_close("add", out.vec(), ref, 0, 0);
  g_gpu->accumulate(out.p(), da.p(), n);
  g_cpu->accumulate(ref.data(), a.data(), n);
  expect_close("accumulate", out.vec(), ref, 0, 0);
  g_gpu->scale(out.p(), 0.37f, n);
  g_cpu->scale(ref.data(), 0.37f, n);
  expect_close("scale", out.vec(), ref, 0, 0);
  g_gpu->copy(out.p(), db.p(), n);
  expect_close("copy", out.vec(), b, 0, 0);
  EXPECT_NEAR(g_gpu->sum_squares(da.p(), n), g_cpu->sum_squares(a.data(), n), 1e-9 * g_cpu->sum_squares(a.data(), n));
  EXPECT_TRUE(g_gpu->all_finite(da.p(), n));
  a[777] = std::numeric_limits<float>::quiet_NaN();
  Dev dn(*g_gpu, a);
  EXPECT_FALSE(g_gpu->all_finite(dn.p(), n));
  a[777] = std::numeric_limits<float>::infinity();
  Dev di(*g_gpu, a);
  EXPECT_FALSE(g_gpu->all_finite(di.p(), n));
  g_gpu->zero(out.p(), n);
  expect_close("zero", out.vec(), std::vector<float>(static_cast<size_t>(n), 0.0f), 0, 0);
  EXPECT_EQ(g_gpu->sum_squares(out.p(), 0), 0.0);
  EXPECT_GUARDS(out);
}

TEST(BackendOps, Bias) {
  const int64_t M = 300, N = 77;
  auto x = randv(M * N, 3), bias = randv(N, 4), dbias0 = randv(N, 5);
  Dev dx(*g_gpu, x), dbias(*g_gpu, bias), dgrad(*g_gpu, dbias0);
  g_gpu->add_bias(dx.p(), dbias.p(), M, N);
  auto ref = x;
  g_cpu->add_bias(ref.data(), bias.data(), M, N);
  expect_close("add_bias", dx.vec(), ref, 0, 0);
  g_gpu->bias_backward(dgrad.p(), dx.p(), M, N);
  auto rg = dbias0;
  g_cpu->bias_backward(rg.data(), ref.data(), M, N);
  expect_close("bias_backward", dgrad.vec(), rg, 1e-5, 1e-5);
  EXPECT_GUARDS(dx);
  EXPECT_GUARDS(dgrad);
}

namespace {
std::vector<float> bf16v(std::vector<float> v) {
  for (float& x : v) x = km::bf16_round(x);
  return v;
}

// out = inp W^T (+bias), dinp = dout W, dW += dout^T inp, db += colsum(dout), on both backends;
// bf16: the CPU gets bf16-rounded operands (the GPU rounds them itself)
void check_gemms(CudaBackend& gpu, int64_t M, int64_t K, int64_t N, bool bf16, uint32_t seed) {
  SCOPED_TRACE("M=" + std::to_string(M) + " K=" + std::to_string(K) + " N=" + std::to_string(N) + (bf16 ? " bf16" : " fp32"));
  auto inp = randv(M * K, seed), W = randv(N * K + 1, seed + 1), bias = randv(N, seed + 2);
  auto out0 = randv(M * N, seed + 3), dout = randv(M * N, seed + 4), dinp0 = randv(M * K, seed + 5);
  auto dW0 = randv(N * K, seed + 6), db0 = randv(N, seed + 7);
  // the weight sits one float past an aligned start: cuBLASLt must be told the true alignment
  Dev din(gpu, inp), dWt(gpu, W), dbias(gpu, bias), dout_d(gpu, dout), o(gpu, out0), di(gpu, dinp0), dw(gpu, dW0), db(gpu, db0);
  const float* w = dWt.p() + 1;
  const auto ci = bf16 ? bf16v(inp) : inp,
             cw = bf16 ? bf16v(std::vector<float>(W.begin() + 1, W.end())) : std::vector<float>(W.begin() + 1, W.end());
  const auto cdo = bf16 ? bf16v(dout) : dout;
  const double tol = (bf16 ? 2e-5 : 1e-5) * std::sqrt(double(std::max<int64_t>(K, 1)));
  // forward with bias, then accumulate
  gpu.matmul_forward(o.p(), din.p(), w, dbias.p(), M, K, N);
  std::vector<float> ref(static_cast<size_t>(M * N));
  g_cpu->matmul_forward(ref.data(), ci.data(), cw.data(), bias.data(), M, K, N);
  expect_close("matmul_forward", o.vec(), ref, 1e-4, tol);
  gpu.matmul_forward(o.p(), din.p(), w, nullptr, M, K, N, true);
  g_cpu->matmul_forward(ref.data(), ci.data(), cw.data(), nullptr, M, K, N, true);
  expect_close("matmul_forward accumulate", o.vec(), ref, 1e-4, 2 * tol);
  // backward input, overwrite and accumulate
  auto rdi = dinp0;
  gpu.matmul_backward_input(di.p(), dout_d.p(), w, M, K, N, true);
  g_cpu->matmul_backward_input(rdi.data(), cdo.data(), cw.data(), M, K, N, true);
  expect_close("matmul_backward_input accumulate", di.vec(), rdi, 1e-4, tol);
  gpu.matmul_backward_input(di.p(), dout_d.p(), w, M, K, N, false);
  g_cpu->matmul_backward_input(rdi.data(), cdo.data(), cw.data(), M, K, N, false);
  expect_close("matmul_backward_input", di.vec(), rdi, 1e-4, tol);
  // backward weight (+= semantics) and bias
  auto rdw = dW0, rdb = db0;
  gpu.matmul_backward_weight(dw.p(), db.p(), dout_d.p(), din.p(), M, K, N);
  g_cpu->matmul_backward_weight(rdw.data(), rdb.data(), cdo.data(), ci.data(), M, K, N);
  expect_close("matmul_backward_weight", dw.vec(), rdw, 1e-4, (bf16 ? 2e-5 : 1e-5) * std::sqrt(double(M)));
  std::vector<float> rdb_fp32 = db0;  // the bias gradient is fp32 in both modes
  g_cpu->bias_backward(rdb_fp32.data(), dout.data(), M, N);
  expect_close("dbias", db.vec(), rdb_fp32, 1e-5, 1e-5 * std::sqrt(double(M)));
  // both backward GEMMs through one call (the CUDA backend converts dout once), accumulating
  Dev di2(gpu, dinp0), dw2(gpu, dW0), db2(gpu, db0);
  auto rdi2 = dinp0, rdw2 = dW0, rdb2 = db0;
  gpu.matmul_backward(di2.p(), true, dw2.p(), db2.p(), dout_d.p(), w, din.p(), M, K, N);
  g_cpu->matmul_backward_input(rdi2.data(), cdo.data(), cw.data(), M, K, N, true);
  g_cpu->matmul_backward_weight(rdw2.data(), nullptr, cdo.data(), ci.data(), M, K, N);
  g_cpu->bias_backward(rdb2.data(), dout.data(), M, N);
  expect_close("matmul_backward dinp", di2.vec(), rdi2, 1e-4, tol);
  expect_close("matmul_backward dW", dw2.vec(), rdw2, 1e-4, (bf16 ? 2e-5 : 1e-5) * std::sqrt(double(M)));
  expect_close("matmul_backward dbias", db2.vec(), rdb2, 1e-5, 1e-5 * std::sqrt(double(M)));
  for (Dev* d : {&o, &di, &dw, &db, &di2, &dw2, &db2}) EXPECT_GUARDS(*d);
}
}  // namespace

TEST(BackendOps, GemmFp32) {
  uint32_t seed = 10;
  for (auto [M, K, N] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 1, 1}, {37, 64, 29}, {128, 256, 512}, {300, 77, 1000}, {5, 3000, 7}})
    check_gemms(*g_gpu, M, K, N, false, seed += 10);
  // K == 0: the product is empty (zero, or unchanged when accumulating), the bias still applies
  auto bias = randv(4, 99);
  Dev o(*g_gpu, randv(12, 98)), b(*g_gpu, bias), none(*g_gpu, 1);
  g_gpu->matmul_forward(o.p(), none.p(), none.p(), b.p(), 3, 0, 4);
  std::vector<float> ref(12);
  for (int i = 0; i < 12; ++i) ref[static_cast<size_t>(i)] = bias[static_cast<size_t>(i % 4)];
  expect_close("matmul_forward K=0", o.vec(), ref, 0, 0);
  EXPECT_GUARDS(o);
}

TEST(BackendOps, GemmBf16) {
  uint32_t seed = 200;
  for (auto [M, K, N] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{37, 64, 29}, {128, 256, 512}, {300, 77, 1000}})
    check_gemms(*g_gpu_bf16, M, K, N, true, seed += 10);
}

// A width N that is not a multiple of 8 (GPT-2's vocabulary of 50257) runs through aligned copies:
// the output gradient's bf16 copy with a padded row stride, the forward through an aligned scratch,
// here in blocks of 64 rows (a scratch smaller than one row forces the smallest block)
TEST(BackendOps, GemmBf16OfAnUnalignedWidthInRowBlocks) {
  CudaBackendOptions o;
  o.gemm = gpu::GemmPrecision::bf16;
  o.padded_chunk_bytes = 1;
  CudaBackend be(o);
  uint32_t seed = 700;
  for (auto [M, K, N] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{300, 64, 29}, {64, 96, 1001}, {129, 32, 5}})
    check_gemms(be, M, K, N, true, seed += 10);
}

TEST(BackendOps, Bf16WorkingWeightsFollowAdamW) {
  // a parameter buffer updated by AdamW gets a bf16 working copy; GEMMs after each update use the
  // updated weights (as converting them on the fly would)
  CudaBackend& be = *g_gpu_bf16;
  const int64_t M = 16, K = 32, N = 24;
  auto w0 = randv(N * K, 300), g = randv(N * K, 301), inp = randv(M * K, 302);
  Dev W(be, w0), G(be, g), m(be, N * K), v(be, N * K), x(be, inp), out(be, M * N);
  std::vector<float> cw = w0, cm(static_cast<size_t>(N * K)), cv(static_cast<size_t>(N * K));
  for (int step = 1; step <= 3; ++step) {
    AdamWArgs a;
    a.lr = 0.05f, a.weight_decay = 0.1f, a.step = step;
    be.adamw(W.p(), G.p(), m.p(), v.p(), N * K, a);
    g_cpu->adamw(cw.data(), g.data(), cm.data(), cv.data(), N * K, a);
    be.matmul_forward(out.p(), x.p(), W.p() + K, nullptr, M, K, N - 1);  // a row-offset view of the range
    std::vector<float> ref(static_cast<size_t>(M * (N - 1)));
    const auto cwb = bf16v(std::vector<float>(cw.begin() + K, cw.end()));
    g_cpu->matmul_forward(ref.data(), bf16v(inp).data(), cwb.data(), nullptr, M, K, N - 1);
    auto got = out.vec();
    got.resize(ref.size());
    expect_close("matmul after adamw", got, ref, 1e-4, 1e-4);
  }
  EXPECT_GUARDS(W);
  EXPECT_GUARDS(out);
}

TEST(BackendOps, Norms) {
  for (int64_t C : {64, 1000}) {
    SCOPED_TRACE("C=" + std::to_string(C));
    const int64_t N = 67;
    auto x = randv(N * C, 20, -2, 3), w = randv(C, 21, 0.5f, 1.5f), b = randv(C, 22), dy = randv(N * C, 23);
    auto dx0 = randv(N * C, 24), dw0 = randv(C, 25), db0 = randv(C, 26);
    for (bool with_bias : {true, false}) {
      Dev X(*g_gpu, x), Wt(*g_gpu, w), B(*g_gpu, b), out(*g_gpu, N * C), mean(*g_gpu, N), rstd(*g_gpu, N);
      g_gpu->layernorm_forward(out.p(), mean.p(), rstd.p(), X.p(), Wt.p(), with_bias ? B.p() : nullptr, N, C, 1e-5f);
      std::vector<float> ro(static_cast<size_t>(N * C)), rm(static_cast<size_t>(N)), rr(static_cast<size_t>(N));
      g_cpu->layernorm_forward(ro.data(), rm.data(), rr.data(), x.data(), w.data(), with_bias ? b.data() : nullptr, N, C, 1e-5f);
      expect_close("layernorm_forward", out.vec(), ro, 1e-5, 1e-5);
      expect_close("layernorm mean", mean.vec(), rm, 1e-6, 1e-6);
      expect_close("layernorm rstd", rstd.vec(), rr, 1e-6, 1e-6);
      for (bool acc : {true, false}) {
        Dev DY(*g_gpu, dy), dx(*g_gpu, dx0), dw(*g_gpu, dw0), db(*g_gpu, db0);
        g_gpu->layernorm_backward(dx.p(), dw.p(), with_bias ? db.p() : nullptr, DY.p(), X.p(), Wt.p(), mean.p(), rstd.p(), N, C,
                                  acc);
        auto rdx = dx0, rdw = dw0, rdb = db0;
        g_cpu->layernorm_backward(rdx.data(), rdw.data(), with_bias ? rdb.data() : nullptr, dy.data(), x.data(), w.data(),
                                  rm.data(), rr.data(), N, C, acc);
        expect_close("layernorm dx", dx.vec(), rdx, 1e-4, 1e-5);
        expect_close("layernorm dw", dw.vec(), rdw, 1e-4, 1e-4);
        expect_close("layernorm db", db.vec(), rdb, 1e-4, 1e-4);
        for (Dev* d : {&dx, &dw, &db}) EXPECT_GUARDS(*d);
      }
      for (Dev* d : {&out, &mean, &rstd}) EXPECT_GUARDS(*d);
    }
    // rmsnorm
    Dev X(*g_gpu, x), Wt(*g_gpu, w), out(*g_gpu, N * C), rstd(*g_gpu, N), DY(*g_gpu, dy), dx(*g_gpu, dx0), dw(*g_gpu, dw0);
    g_gpu->rmsnorm_forward(out.p(), rstd.p(), X.p(), Wt.p(), N, C, 1e-6f);
    std::vector<float> ro(static_cast<size_t>(N * C)), rr(static_cast<size_t>(N));
    g_cpu->rmsnorm_forward(ro.data(), rr.data(), x.data(), w.data(), N, C, 1e-6f);
    expect_close("rmsnorm_forward", out.vec(), ro, 1e-5, 1e-5);
    expect_close("rmsnorm rstd", rstd.vec(), rr, 1e-6, 1e-6);
    g_gpu->rmsnorm_backward(dx.p(), dw.p(), DY.p(), X.p(), Wt.p(), rstd.p(), N, C, true);
    auto rdx = dx0, rdw = dw0;
    g_cpu->rmsnorm_backward(rdx.data(), rdw.data(), dy.data(), x.data(), w.data(), rr.data(), N, C, true);
    expect_close("rmsnorm dx", dx.vec(), rdx, 1e-4, 1e-5);
    expect_close("rmsnorm dw", dw.vec(), rdw, 1e-4, 1e-4);
    for (Dev* d : {&out, &rstd, &dx, &dw}) EXPECT_GUARDS(*d);
  }
}

TEST(BackendOps, Rope) {
  const int64_t N = 50, H = 3, D = 32;
  auto x = randv(N * H * D, 30);
  auto pos = randi(N, 31, 0, 4000);
  Dev X(*g_gpu, x);
  g_gpu->rope_forward(X.p(), pos.data(), N, H, D, 10000.0f);
  auto ref = x;
  g_cpu->rope_forward(ref.data(), pos.data(), N, H, D, 10000.0f);
  expect_close("rope_forward", X.vec(), ref, 1e-5, 1e-5);
  g_gpu->rope_backward(X.p(), pos.data(), N, H, D, 10000.0f);
  g_cpu->rope_backward(ref.data(), pos.data(), N, H, D, 10000.0f);
  expect_close("rope_backward", X.vec(), ref, 1e-5, 1e-5);
  expect_close("rope round trip", X.vec(), x, 1e-5, 1e-5);
  EXPECT_GUARDS(X);
}

namespace {
struct AttnCase {
  int64_t B, Tq, Tk, Hq, Hkv, D, Dv;
  std::vector<int32_t> qpos, kpos;
};
std::vector<int32_t> iota_pos(int64_t n, int32_t from = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = from + int32_t(i);
  return v;
}
// context-parallel style positions: two chunks of a longer sequence
std::vector<int32_t> two_chunks(int64_t half, int32_t a, int32_t b) {
  auto v = iota_pos(half, a), w = iota_pos(half, b);
  v.insert(v.end(), w.begin(), w.end());
  return v;
}

void check_attention(const AttnCase& c, uint32_t seed) {
  SCOPED_TRACE("B=" + std::to_string(c.B) + " Tq=" + std::to_string(c.Tq) + " Tk=" + std::to_string(c.Tk) +
               " Hq=" + std::to_string(c.Hq) + " Hkv=" + std::to_string(c.Hkv) + " D=" + std::to_string(c.D) +
               " Dv=" + std::to_string(c.Dv));
  Backend::AttnShape s{c.B, c.Tq, c.Tk, c.Hq, c.Hkv, c.D, c.Dv, 1.0f / std::sqrt(float(c.D))};
  const int64_t nq = c.B * c.Tq * c.Hq * c.D, nk = c.B * c.Tk * c.Hkv * c.D, nv = c.B * c.Tk * c.Hkv * c.Dv;
  const int64_t no = c.B * c.Tq * c.Hq * c.Dv, nl = c.B * c.Hq * c.Tq;
  auto q = randv(nq, seed), k = randv(nk, seed + 1), v = randv(nv, seed + 2), dout = randv(no, seed + 3);
  Dev Q(*g_gpu, q), K(*g_gpu, k), V(*g_gpu, v), O(*g_gpu, no), L(*g_gpu, nl), DO(*g_gpu, dout), delta(*g_gpu, nl);
  g_gpu->attention_forward(O.p(), L.p(), Q.p(), K.p(), V.p(), c.qpos.data(), c.kpos.data(), s, false);
  std::vector<float> ro(static_cast<size_t>(no)), rl(static_cast<size_t>(nl)), rdelta(static_cast<size_t>(nl));
  g_cpu->attention_forward(ro.data(), rl.data(), q.data(), k.data(), v.data(), c.qpos.data(), c.kpos.data(), s, false);
  expect_close("attention out", O.vec(), ro, 1e-4, 2e-5);
  expect_close("attention lse", L.vec(), rl, 1e-5, 1e-5);
  g_gpu->attention_backward_prepare(delta.p(), DO.p(), O.p(), s);
  g_cpu->attention_backward_prepare(rdelta.data(), dout.data(), ro.data(), s);
  expect_close("attention delta", delta.vec(), rdelta, 1e-4, 1e-5);
  // gradients accumulate onto what is there
  auto dq0 = randv(nq, seed + 4), dk0 = randv(nk, seed + 5), dv0 = randv(nv, seed + 6);
  Dev dq(*g_gpu, dq0), dk(*g_gpu, dk0), dv(*g_gpu, dv0);
  g_gpu->attention_backward(dq.p(), dk.p(), dv.p(), DO.p(), L.p(), delta.p(), Q.p(), K.p(), V.p(), c.qpos.data(), c.kpos.data(),
                            s);
  auto rdq = dq0, rdk = dk0, rdv = dv0;
  g_cpu->attention_backward(rdq.data(), rdk.data(), rdv.data(), dout.data(), rl.data(), rdelta.data(), q.data(), k.data(),
                            v.data(), c.qpos.data(), c.kpos.data(), s);
  expect_close("attention dq", dq.vec(), rdq, 1e-3, 1e-4);
  expect_close("attention dk", dk.vec(), rdk, 1e-3, 1e-4);
  expect_close("attention dv", dv.vec(), rdv, 1e-3, 1e-4);
  for (Dev* d : {&O, &L, &delta, &dq, &dk, &dv}) EXPECT_GUARDS(*d);
}
}  // namespace

TEST(BackendOps, AttentionMatchesTheCpu) {
  uint32_t seed = 40;
  const std::vector<AttnCase> cases = {
      {2, 50, 50, 4, 2, 16, 16, iota_pos(50), iota_pos(50)},                      // causal, GQA, partial tiles
      {1, 97, 97, 2, 1, 64, 64, iota_pos(97), iota_pos(97)},                      // MQA
      {1, 64, 64, 2, 2, 128, 128, iota_pos(64), iota_pos(64)},                    // Llama head dim
      {1, 40, 40, 1, 1, 256, 256, iota_pos(40), iota_pos(40)},                    // the largest head dim
      {2, 33, 33, 3, 3, 80, 48, iota_pos(33), iota_pos(33)},                      // D != Dv, not multiples of 32
      {1, 32, 32, 2, 1, 32, 32, two_chunks(16, 16, 96), two_chunks(16, 0, 112)},  // CP chunks, some rows blind
      {1, 20, 45, 2, 2, 16, 16, iota_pos(20, 25), iota_pos(45)},                  // queries at the end of a longer sequence
  };
  for (const auto& c : cases) check_attention(c, seed += 10);
}

TEST(BackendOps, AttentionMergesKeyBlocks) {
  // a ring of two key blocks (context parallel) with merge = true on the second
  const int64_t B = 1, T = 48, H = 2, D = 32;
  Backend::AttnShape s{B, T, T, H, H, D, D, 0.2f};
  const auto qpos = two_chunks(24, 24, 72), k1 = two_chunks(24, 0, 96), k2 = two_chunks(24, 24, 72);
  auto q = randv(B * T * H * D, 50), ka = randv(B * T * H * D, 51), va = randv(B * T * H * D, 52), kb = randv(B * T * H * D, 53),
       vb = randv(B * T * H * D, 54);
  Dev Q(*g_gpu, q), KA(*g_gpu, ka), VA(*g_gpu, va), KB(*g_gpu, kb), VB(*g_gpu, vb), O(*g_gpu, B * T * H * D),
      L(*g_gpu, B * H * T);
  g_gpu->attention_forward(O.p(), L.p(), Q.p(), KA.p(), VA.p(), qpos.data(), k1.data(), s, false);
  g_gpu->attention_forward(O.p(), L.p(), Q.p(), KB.p(), VB.p(), qpos.data(), k2.data(), s, true);
  std::vector<float> ro(static_cast<size_t>(B * T * H * D)), rl(static_cast<size_t>(B * H * T));
  g_cpu->attention_forward(ro.data(), rl.data(), q.data(), ka.data(), va.data(), qpos.data(), k1.data(), s, false);
  g_cpu->attention_forward(ro.data(), rl.data(), q.data(), kb.data(), vb.data(), qpos.data(), k2.data(), s, true);
  expect_close("merged out", O.vec(), ro, 1e-4, 2e-5);
  expect_close("merged lse", L.vec(), rl, 1e-5, 1e-5);
  EXPECT_GUARDS(O);
  EXPECT_GUARDS(L);
}

TEST(BackendOps, Activations) {
  const int64_t N = 37, F = 129;
  for (ActKind a : {ActKind::gelu, ActKind::swiglu, ActKind::squared_relu}) {
    const int64_t in = a == ActKind::swiglu ? N * 2 * F : N * F;
    auto x = randv(in, 60, -6, 6), dy = randv(N * F, 61);
    Dev X(*g_gpu, x), out(*g_gpu, N * F), DY(*g_gpu, dy), dx(*g_gpu, in);
    g_gpu->act_forward(a, out.p(), X.p(), N, F);
    std::vector<float> ro(static_cast<size_t>(N * F)), rdx(static_cast<size_t>(in));
    g_cpu->act_forward(a, ro.data(), x.data(), N, F);
    expect_close("act_forward", out.vec(), ro, 1e-5, 1e-6);
    g_gpu->act_backward(a, dx.p(), DY.p(), X.p(), N, F);
    g_cpu->act_backward(a, rdx.data(), dy.data(), x.data(), N, F);
    expect_close("act_backward", dx.vec(), rdx, 1e-5, 1e-6);
    EXPECT_GUARDS(out);
    EXPECT_GUARDS(dx);
  }
}

TEST(BackendOps, Embeddings) {
  const int64_t N = 90, C = 48, vstart = 100, rows = 100, P = 40;
  auto wte = randv(rows * C, 70), wpe = randv(P * C, 71), dout = randv(N * C, 72);
  auto tokens = randi(N, 73, 0, 299);  // a third of them owned by this shard, with repeats
  auto pos = randi(N, 74, 0, int32_t(P - 1));
  Dev W(*g_gpu, wte), WP(*g_gpu, wpe), out(*g_gpu, N * C), DO(*g_gpu, dout), dW(*g_gpu, randv(rows * C, 75)),
      dWP(*g_gpu, randv(P * C, 76));
  g_gpu->embedding_forward(out.p(), tokens.data(), W.p(), N, C, vstart, rows);
  std::vector<float> ro(static_cast<size_t>(N * C));
  g_cpu->embedding_forward(ro.data(), tokens.data(), wte.data(), N, C, vstart, rows);
  expect_close("embedding_forward", out.vec(), ro, 0, 0);
  g_gpu->position_forward(out.p(), WP.p(), pos.data(), N, C);
  g_cpu->position_forward(ro.data(), wpe.data(), pos.data(), N, C);
  expect_close("position_forward", out.vec(), ro, 0, 0);
  auto rdw = randv(rows * C, 75), rdp = randv(P * C, 76);
  g_gpu->embedding_backward(dW.p(), DO.p(), tokens.data(), N, C, vstart, rows);
  g_cpu->embedding_backward(rdw.data(), dout.data(), tokens.data(), N, C, vstart, rows);
  expect_close("embedding_backward", dW.vec(), rdw, 1e-6, 1e-6);
  g_gpu->position_backward(dWP.p(), DO.p(), pos.data(), N, C);
  g_cpu->position_backward(rdp.data(), dout.data(), pos.data(), N, C);
  expect_close("position_backward", dWP.vec(), rdp, 1e-6, 1e-6);
  for (Dev* d : {&out, &dW, &dWP}) EXPECT_GUARDS(*d);
}

namespace {
void check_xent(int64_t N, int64_t V, int64_t valid, int64_t vstart, uint32_t seed) {
  SCOPED_TRACE("N=" + std::to_string(N) + " V=" + std::to_string(V) + " valid=" + std::to_string(valid));
  auto logits = randv(N * V, seed, -5, 5);
  // some in this shard, some in padding columns, some elsewhere
  auto targets = randi(N, seed + 1, int32_t(vstart - 100), int32_t(vstart + V + 100));
  Dev L(*g_gpu, logits), gmax(*g_gpu, N), both(*g_gpu, 2 * N);
  g_gpu->xent_rowmax(gmax.p(), L.p(), N, V, valid);
  std::vector<float> rl = logits, rmax(static_cast<size_t>(N)), rboth(static_cast<size_t>(2 * N));
  g_cpu->xent_rowmax(rmax.data(), rl.data(), N, V, valid);
  expect_close("xent_rowmax", gmax.vec(), rmax, 0, 0);
  g_gpu->xent_sumexp_target(both.p(), both.p() + N, L.p(), gmax.p(), targets.data(), N, V, valid, vstart);
  g_cpu->xent_sumexp_target(rboth.data(), rboth.data() + N, rl.data(), rmax.data(), targets.data(), N, V, valid, vstart);
  expect_close("xent sumexp/target", both.vec(), rboth, 1e-5, 1e-6);
  expect_close("xent exp(logits)", L.vec(), rl, 1e-6, 1e-7);
  const std::vector<float> dloss(static_cast<size_t>(N), 1.0f / 64);  // a host array, as the layers pass it
  g_gpu->xent_backward(L.p(), gmax.p(), both.p(), targets.data(), dloss.data(), N, V, valid, vstart);
  g_cpu->xent_backward(rl.data(), rmax.data(), rboth.data(), targets.data(), dloss.data(), N, V, valid, vstart);
  expect_close("xent_backward", L.vec(), rl, 1e-5, 1e-7);
  for (Dev* d : {&L, &gmax, &both}) EXPECT_GUARDS(*d);
}
}  // namespace

TEST(BackendOps, CrossEntropy) {
  check_xent(33, 300, 290, 512, 80);       // 256-thread rows
  check_xent(5, 3000, 2999, 0, 82);        // 512-thread rows
  check_xent(3, 50304, 50257, 50304, 84);  // 1024-thread rows (GPT-2 vocabulary shard)
}

TEST(BackendOps, MoeRoutingAndRows) {
  const int64_t N = 70, E = 8, k = 2, C = 40;
  auto logits = randv(N * E, 90, -3, 3);
  for (int64_t e = 0; e < E; ++e) logits[static_cast<size_t>(5 * E + e)] = 0.5f;           // a row of ties
  logits[static_cast<size_t>(6 * E + 3)] = logits[static_cast<size_t>(6 * E + 6)] = 9.0f;  // a tie at the top
  Dev LG(*g_gpu, logits), probs(*g_gpu, N * E), weights(*g_gpu, N * k);
  std::vector<int32_t> idx(static_cast<size_t>(N * k)), ridx(static_cast<size_t>(N * k));
  g_gpu->moe_route_forward(probs.p(), idx.data(), weights.p(), LG.p(), N, E, k);
  std::vector<float> rp(static_cast<size_t>(N * E)), rw(static_cast<size_t>(N * k));
  g_cpu->moe_route_forward(rp.data(), ridx.data(), rw.data(), logits.data(), N, E, k);
  EXPECT_EQ(idx, ridx);
  expect_close("router probs", probs.vec(), rp, 1e-6, 1e-7);
  expect_close("router weights", weights.vec(), rw, 1e-6, 1e-7);
  auto dw = randv(N * k, 91), dp = randv(N * E, 92);
  Dev DW(*g_gpu, dw), DP(*g_gpu, dp), dl(*g_gpu, N * E);
  for (bool with_probs : {true, false}) {
    g_gpu->moe_route_backward(dl.p(), DW.p(), with_probs ? DP.p() : nullptr, probs.p(), idx.data(), weights.p(), N, E, k);
    std::vector<float> rdl(static_cast<size_t>(N * E));
    g_cpu->moe_route_backward(rdl.data(), dw.data(), with_probs ? dp.data() : nullptr, rp.data(), ridx.data(), rw.data(), N, E,
                              k);
    expect_close("router backward", dl.vec(), rdl, 1e-5, 1e-7);
  }
  // permutation: gather, weighted scatter-add with repeated rows, row scaling and dots
  const int64_t R = 55;
  auto src = randv(N * C, 93), rowsrc = randv(R * C, 94), w = randv(R, 95), dst0 = randv(N * C, 96);
  auto rows = randi(R, 97, 0, int32_t(N - 1));
  Dev S(*g_gpu, src), RS(*g_gpu, rowsrc), Wt(*g_gpu, w), g(*g_gpu, R * C), dst(*g_gpu, dst0), dots(*g_gpu, R);
  g_gpu->gather_rows(g.p(), S.p(), rows.data(), R, C);
  std::vector<float> rg(static_cast<size_t>(R * C));
  g_cpu->gather_rows(rg.data(), src.data(), rows.data(), R, C);
  expect_close("gather_rows", g.vec(), rg, 0, 0);
  auto rdst = dst0;
  for (bool weighted : {true, false}) {
    g_gpu->scatter_add_rows(dst.p(), RS.p(), rows.data(), weighted ? Wt.p() : nullptr, R, C);
    g_cpu->scatter_add_rows(rdst.data(), rowsrc.data(), rows.data(), weighted ? w.data() : nullptr, R, C);
    expect_close("scatter_add_rows", dst.vec(), rdst, 1e-6, 1e-6);
  }
  g_gpu->row_dot(dots.p(), g.p(), RS.p(), R, C);
  std::vector<float> rd(static_cast<size_t>(R));
  g_cpu->row_dot(rd.data(), rg.data(), rowsrc.data(), R, C);
  expect_close("row_dot", dots.vec(), rd, 1e-5, 1e-6);
  g_gpu->scale_rows(g.p(), Wt.p(), R, C);
  g_cpu->scale_rows(rg.data(), w.data(), R, C);
  expect_close("scale_rows", g.vec(), rg, 0, 0);
  // index arrays already in device memory are used in place
  int32_t* dev_rows = nullptr;
  ASSERT_EQ(cudaMalloc(&dev_rows, sizeof(int32_t) * static_cast<size_t>(R)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dev_rows, rows.data(), sizeof(int32_t) * static_cast<size_t>(R), cudaMemcpyHostToDevice), cudaSuccess);
  g_gpu->gather_rows(g.p(), S.p(), dev_rows, R, C);
  g_cpu->gather_rows(rg.data(), src.data(), rows.data(), R, C);
  expect_close("gather_rows (device index)", g.vec(), rg, 0, 0);
  cudaFree(dev_rows);
  for (Dev* d : {&probs, &weights, &dl, &g, &dst, &dots}) EXPECT_GUARDS(*d);
}

// 16-byte aligned buffers take four elements per thread (plus a scalar tail); a buffer one float
// past an aligned start takes the scalar kernel
TEST(BackendOps, AdamW) {
  for (int64_t skip : {0, 1}) {
    SCOPED_TRACE("skip=" + std::to_string(skip));
    const int64_t n = 5003;
    auto p0 = randv(n + skip, 100), g = randv(n + skip, 101);
    Dev P(*g_gpu, p0), G(*g_gpu, g), M(*g_gpu, n + skip), V(*g_gpu, n + skip);
    std::vector<float> rp = p0, rm(static_cast<size_t>(n + skip)), rv(static_cast<size_t>(n + skip));
    for (int step = 1; step <= 3; ++step) {
      AdamWArgs a;
      a.lr = 3e-3f, a.weight_decay = 0.1f, a.step = step;
      g_gpu->adamw(P.p() + skip, G.p() + skip, M.p() + skip, V.p() + skip, n, a);
      g_cpu->adamw(rp.data() + skip, g.data() + skip, rm.data() + skip, rv.data() + skip, n, a);
    }
    expect_close("adamw param", P.vec(), rp, 1e-6, 1e-7);
    expect_close("adamw m", M.vec(), rm, 1e-6, 1e-8);
    expect_close("adamw v", V.vec(), rv, 1e-6, 1e-9);
    for (Dev* d : {&P, &M, &V}) EXPECT_GUARDS(*d);
  }
}

// Issue 29: parameters are initialised by a kernel running the CPU's km::init_normal. The device's
// libm may differ from glibc in the last bit of a double, so a rare float may differ by an ulp.
TEST(BackendOps, ParamInitMatchesTheCpuInit) {
  ParamSpec s;
  s.name = "layers.3.mlp.fc1.weight";
  s.rows = 301;  // one padding row past the shard
  s.cols = 77;
  s.map = ShardMap::rows(600, 77, 300, 600);
  ParamSpec ones = s;
  ones.name = "layers.3.mlp_norm.weight", ones.rows = 77, ones.cols = 1, ones.map = ShardMap::whole(77),
  ones.init = InitKind::ones;
  ParamStore on_gpu, on_cpu;
  for (ParamStore* ps : {&on_gpu, &on_cpu}) {
    ps->add(s);
    ps->add(ones);
  }
  on_gpu.allocate(*g_gpu, 1, 1, 1234);
  on_cpu.allocate(*g_cpu, 1, 1, 1234);
  std::vector<float> got(static_cast<size_t>(on_gpu.size(ParamClass::dense)));
  g_gpu->download(got.data(), on_gpu.params(ParamClass::dense).data(), int64_t(got.size()));
  const float* want = on_cpu.params(ParamClass::dense).data();
  int64_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    ++differ;
    EXPECT_NEAR(got[i], want[i], 2e-7 * std::fabs(want[i]) + 1e-12) << "element " << i;
  }
  EXPECT_LE(differ, int64_t(got.size()) / 1000) << differ << " of " << got.size() << " differ";
  EXPECT_EQ(got[size_t(300 * 77)], 0.0f);  // the padding row
  EXPECT_EQ(got[size_t(on_gpu.entry(1).offset)], 1.0f);
}

// Every device allocation is counted: tensors, and the cuBLASLt workspace the backend holds.
TEST(BackendOps, PeakDeviceBytesCountEveryAllocation) {
  const int64_t mib = int64_t(1) << 20;
  {
    Tensor t = g_gpu->alloc({16 * mib});  // 64 MiB
    EXPECT_GE(g_gpu->pool().allocated_bytes(), 64 * mib + 32 * mib);
  }
  EXPECT_GE(g_gpu->peak_device_bytes(), g_gpu->memory().peak() + 32 * mib);
  EXPECT_GE(g_gpu->pool().reserved_bytes(), g_gpu->pool().allocated_bytes());
}

TEST(BackendOps, DescribesTheDevice) {
  EXPECT_NE(g_gpu->describe().find("sm_"), std::string::npos) << g_gpu->describe();
  EXPECT_GT(g_gpu->memory().peak(), 0);
}

int main(int argc, char** argv) {
  if (!mplan::test::start_gpu_tests("test_backend_ops", argc, argv)) return 77;
  CpuBackend cpu;
  CudaBackendOptions o;
  CudaBackend gpu(o);
  o.gemm = gpu::GemmPrecision::bf16;
  CudaBackend gpu_bf16(o);
  g_cpu = &cpu, g_gpu = &gpu, g_gpu_bf16 = &gpu_bf16;
  std::printf("CUDA backend: %s\n", gpu.describe().c_str());
  return RUN_ALL_TESTS();
}
