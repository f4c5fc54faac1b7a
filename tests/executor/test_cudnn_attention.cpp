// cuDNN fused attention (MPLAN_ATTENTION=cudnn path) against the fp32 flash kernels on the same GPU:
// causal, MHA/GQA/MQA, head dims 64 and 128, forward (out, lse) and backward (dq, dk, dv, added to
// what is there), at a bf16 tolerance (relative L2 error); context-parallel key blocks keep the fp32
// kernels (bit-identical to the reference backend). Needs a CUDA device: exits 77 without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "executor/backend/backend_factory.h"
#include "executor/backend/cuda/cuda_backend.h"
#include "gpu_test_main.h"
#include "tests/random_values.h"

using namespace mplan::exec;

namespace {

CudaBackend* g_ref = nullptr;    // fp32 SIMT attention
CudaBackend* g_cudnn = nullptr;  // cuDNN attention

using mplan::test::randv;

std::vector<int32_t> positions(int64_t n, int32_t first = 0) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[size_t(i)] = first + int32_t(i);
  return p;
}

// A tensor of one backend, filled from and read back to the host.
struct Buf {
  CudaBackend* be;
  Tensor t;
  Buf(CudaBackend& b, const std::vector<float>& init) : be(&b), t(b.alloc({int64_t(init.size())})) {
    b.upload(t.data(), init.data(), int64_t(init.size()));
  }
  float* p() { return t.data(); }
  std::vector<float> vec() const {
    std::vector<float> h(static_cast<size_t>(t.numel()));
    be->download(h.data(), t.data(), t.numel());
    return h;
  }
};

double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

struct Result {
  std::vector<float> out, lse, dq, dk, dv;
};

Result run(CudaBackend& be, const Backend::AttnShape& s, const std::vector<int32_t>& qpos, const std::vector<int32_t>& kpos,
           uint32_t seed) {
  const int64_t nq = s.B * s.Tq * s.Hq * s.D, nk = s.B * s.Tk * s.Hkv * s.D, no = s.B * s.Tq * s.Hq * s.Dv;
  const int64_t nl = s.B * s.Hq * s.Tq;
  Buf q(be, randv(nq, seed)), k(be, randv(nk, seed + 1)), v(be, randv(nk, seed + 2)), dout(be, randv(no, seed + 3));
  Buf out(be, std::vector<float>(size_t(no))), lse(be, std::vector<float>(size_t(nl))), delta(be, std::vector<float>(size_t(nl)));
  Buf dq(be, randv(nq, seed + 4)), dk(be, randv(nk, seed + 5)), dv(be, randv(nk, seed + 6));  // gradients add onto these
  be.attention_forward(out.p(), lse.p(), q.p(), k.p(), v.p(), qpos.data(), kpos.data(), s, false);
  be.attention_backward_prepare(delta.p(), dout.p(), out.p(), s);
  be.attention_backward(dq.p(), dk.p(), dv.p(), dout.p(), lse.p(), delta.p(), q.p(), k.p(), v.p(), qpos.data(), kpos.data(), s);
  return {out.vec(), lse.vec(), dq.vec(), dk.vec(), dv.vec()};
}

}  // namespace

TEST(CudaCudnnAttentionGpu, MatchesTheFp32KernelsAtBf16Tolerance) {
  struct Case {
    int64_t B, T, Hq, Hkv, D;
  };
  uint32_t seed = 7;
  for (const Case& c : {Case{2, 128, 4, 4, 64}, Case{1, 100, 8, 2, 128}, Case{2, 64, 4, 1, 64}, Case{1, 256, 2, 2, 128}}) {
    const Backend::AttnShape s{c.B, c.T, c.T, c.Hq, c.Hkv, c.D, c.D, 1.0f / std::sqrt(float(c.D))};
    SCOPED_TRACE("B=" + std::to_string(c.B) + " T=" + std::to_string(c.T) + " Hq=" + std::to_string(c.Hq) +
                 " Hkv=" + std::to_string(c.Hkv) + " D=" + std::to_string(c.D));
    const auto pos = positions(c.T);
    const Result want = run(*g_ref, s, pos, pos, seed), got = run(*g_cudnn, s, pos, pos, seed);
    seed += 10;
    EXPECT_LT(rel_l2(got.out, want.out), 2e-2);
    double lse_err = 0;
    for (size_t i = 0; i < want.lse.size(); ++i) lse_err = std::max(lse_err, std::fabs(double(got.lse[i]) - want.lse[i]));
    EXPECT_LT(lse_err, 3e-2);
    EXPECT_LT(rel_l2(got.dq, want.dq), 3e-2);
    EXPECT_LT(rel_l2(got.dk, want.dk), 3e-2);
    EXPECT_LT(rel_l2(got.dv, want.dv), 3e-2);
    EXPECT_GT(rel_l2(got.out, want.out), 0.0) << "identical to fp32: the cuDNN path did not run";
  }
}

TEST(CudaCudnnAttentionGpu, ContextParallelBlocksKeepTheFp32Kernels) {
  const Backend::AttnShape s{1, 64, 64, 2, 2, 64, 64, 0.125f};
  const auto qpos = positions(64, 64), kpos = positions(64, 0);  // a later query chunk against earlier keys
  const Result want = run(*g_ref, s, qpos, kpos, 3), got = run(*g_cudnn, s, qpos, kpos, 3);
  EXPECT_EQ(got.out, want.out);
  EXPECT_EQ(got.dq, want.dq);
  EXPECT_EQ(got.dk, want.dk);
}

TEST(CudaCudnnAttentionGpu, PeakMemoryCountsTheCudnnScratch) {
  const int64_t before = g_cudnn->peak_device_bytes();
  const Backend::AttnShape s{2, 512, 512, 8, 8, 128, 128, 0.088f};
  (void)run(*g_cudnn, s, positions(512), positions(512), 11);
  // bf16 copies of q, k, v, o, dO, dq, dk, dv and the fp32 dQ accumulator come from the pool
  EXPECT_GE(g_cudnn->peak_device_bytes() - before, int64_t(2 * 512 * 8 * 128) * 4);
}

int main(int argc, char** argv) {
  if (!mplan::test::start_gpu_tests("test_cudnn_attention", argc, argv)) return 77;
  CudaBackendOptions o;
  CudaBackend ref(o);
  o.cudnn_attention = true;
  CudaBackend cudnn(o);
  g_ref = &ref, g_cudnn = &cudnn;
  std::printf("CUDA backend: %s, cuDNN %lld\n", cudnn.describe().c_str(), (long long)gpu::cudnn_runtime_version());
  return RUN_ALL_TESTS();
}
