// The GPU-free parts of the CUDA backend (run on any machine of a CUDA build): the shared
// per-element math of kernel_math.h against independent double-precision formulas (the kernels call
// exactly these functions), launch-configuration arithmetic, the allocator's size classes, the
// row-major -> cuBLASLt column-major GEMM mapping (checked with a naive column-major GEMM), the NCCL
// group plan against RankGrid, the CUPTI op-tag join on synthetic activity buffers, the OpTimers
// tagger hook, and the refusals of the cuda backend without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "core/rank_grid.h"
#include "executor/backend/backend_factory.h"
#include "executor/backend/cuda/cuda_gemm.h"
#include "executor/backend/cuda/cuda_memory.h"
#include "executor/backend/cuda/launch_config.h"
#include "executor/backend/kernel_math.h"
#include "executor/comm/nccl/group_plan.h"
#include "executor/comm/nccl/nccl_comm.h"
#include "executor/train/op_timers.h"
#include "mpi_env.h"
#include "test_plans.h"
#include "tests/random_values.h"
#if defined(MPLAN_HAVE_CUPTI_OP_TIMER)
#include "executor/backend/cuda/cupti_op_timer.h"
#include "tests/profiles/cupti_synthetic.h"
#endif
#if defined(MPLAN_HAVE_BACKEND_OP_KERNELS)
#include "executor/backend/cuda/op_kernels.h"
#endif

using namespace mplan;
using namespace mplan::exec;
namespace km = mplan::exec::km;

namespace {

std::vector<float> sample_points() {
  std::vector<float> xs = {0.0f, -0.0f, 1e-8f, -1e-8f, 0.5f, -0.5f, 1.0f, -1.0f, 3.0f, -3.0f, 8.0f, -8.0f, 20.0f, -20.0f};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-12.0f, 12.0f);
  for (int i = 0; i < 500; ++i) xs.push_back(u(rng));
  return xs;
}

double rel(double a, double b) { return std::fabs(a - b) / std::max(1e-30, std::fabs(b)); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// shared math

TEST(KernelMath, VexpMatchesExpWithinTwoUlpAndKeepsSpecials) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-87.0f, 88.0f);
  for (int i = 0; i < 20000; ++i) {
    const float x = u(rng);
    EXPECT_LT(rel(km::vexp(x), std::exp(double(x))), 2.5e-7) << x;
  }
  EXPECT_EQ(km::vexp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isinf(km::vexp(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isinf(km::vexp(100.0f)));
  EXPECT_TRUE(std::isnan(km::vexp(std::nanf(""))));
  EXPECT_EQ(km::vexp(-200.0f), 0.0f);
  EXPECT_EQ(km::vexp(0.0f), 1.0f);
}

TEST(KernelMath, ActivationsMatchDoubleFormulas) {
  for (float x : sample_points()) {
    const double xd = x, k = std::sqrt(2.0 / M_PI);
    const double t = std::tanh(k * (xd + 0.044715 * xd * xd * xd));
    const double gelu = 0.5 * xd * (1 + t);
    const double dgelu = 0.5 * (1 + t) + 0.5 * xd * (1 - t * t) * k * (1 + 3 * 0.044715 * xd * xd);
    EXPECT_NEAR(km::gelu_forward(x), gelu, 2e-6 * (1 + std::fabs(gelu))) << x;
    EXPECT_NEAR(km::gelu_backward(x, 0.7f), 0.7 * dgelu, 3e-6 * (1 + std::fabs(dgelu))) << x;
    EXPECT_EQ(km::sqrelu_forward(x), x > 0 ? x * x : 0.0f);
    EXPECT_EQ(km::sqrelu_backward(x, 2.0f), x > 0 ? 4.0f * x : 0.0f);
    const double u = 0.3 - 0.01 * xd, s = 1 / (1 + std::exp(-xd));
    EXPECT_NEAR(km::swiglu_forward(x, float(u)), xd * s * u, 2e-6 * (1 + std::fabs(xd * u))) << x;
    float dg, du;
    km::swiglu_backward(x, float(u), 1.5f, &dg, &du);
    EXPECT_NEAR(du, 1.5 * xd * s, 2e-6 * (1 + std::fabs(xd))) << x;
    EXPECT_NEAR(dg, 1.5 * u * (s + xd * s * (1 - s)), 2e-6 * (1 + std::fabs(u * xd))) << x;
  }
}

TEST(KernelMath, Bf16RoundsToNearestEven) {
  const float one = 1.0f;
  EXPECT_EQ(km::bf16_round(one), 1.0f);
  EXPECT_EQ(km::bf16_round(1.0f + std::ldexp(1.0f, -8)), 1.0f);                             // tie -> even
  EXPECT_EQ(km::bf16_round(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));  // tie -> even
  EXPECT_EQ(km::bf16_round(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_TRUE(std::isinf(km::bf16_round(std::numeric_limits<float>::max())));
  EXPECT_TRUE(std::isnan(km::bf16_round(std::nanf(""))));
  EXPECT_EQ(km::bf16_round(-2.5f), -2.5f);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1000.0f, 1000.0f);
  for (int i = 0; i < 10000; ++i) {
    const float x = u(rng), r = km::bf16_round(x);
    uint32_t b;
    std::memcpy(&b, &r, 4);
    EXPECT_EQ(b & 0xffffu, 0u);
    // within half a bf16 ulp (8 significant bits)
    int e;
    std::frexp(x, &e);
    EXPECT_LE(std::fabs(double(r) - double(x)), std::ldexp(1.0, e - 9)) << x;
  }
}

TEST(KernelMath, NormGradientsAreTheTrueGradients) {
  // layernorm and rmsnorm of one row: the per-element dx of kernel_math.h vs central differences of
  // L = sum(dy * norm(x)) computed in double
  const int C = 12;
  std::mt19937 rng(5);
  std::normal_distribution<double> n01;
  std::vector<double> x(C), w(C), dy(C);
  for (int i = 0; i < C; ++i) x[size_t(i)] = n01(rng), w[size_t(i)] = 1 + 0.3 * n01(rng), dy[size_t(i)] = n01(rng);
  const double eps = 1e-5;
  auto ln_loss = [&](const std::vector<double>& v) {
    double m = 0, var = 0, L = 0;
    for (double a : v) m += a;
    m /= C;
    for (double a : v) var += (a - m) * (a - m);
    var /= C;
    for (int i = 0; i < C; ++i) L += dy[size_t(i)] * (v[size_t(i)] - m) / std::sqrt(var + eps) * w[size_t(i)];
    return L;
  };
  auto rms_loss = [&](const std::vector<double>& v) {
    double ss = 0, L = 0;
    for (double a : v) ss += a * a;
    for (int i = 0; i < C; ++i) L += dy[size_t(i)] * v[size_t(i)] / std::sqrt(ss / C + eps) * w[size_t(i)];
    return L;
  };
  double m = 0, var = 0, ss = 0;
  for (double a : x) m += a, ss += a * a;
  m /= C;
  for (double a : x) var += (a - m) * (a - m);
  var /= C;
  const float rstd = km::rstd_from_var(var, float(eps)), rrms = km::rstd_from_var(ss / C, float(eps));
  double a = 0, bb = 0, dot = 0;
  for (int i = 0; i < C; ++i) {
    a += w[size_t(i)] * dy[size_t(i)];
    bb += w[size_t(i)] * dy[size_t(i)] * km::layernorm_xhat(float(x[size_t(i)]), float(m), rstd);
    dot += w[size_t(i)] * dy[size_t(i)] * x[size_t(i)];
  }
  const float c = km::rmsnorm_row_coef(dot / C, rrms);
  for (int i = 0; i < C; ++i) {
    std::vector<double> xp = x, xm = x;
    xp[size_t(i)] += 1e-6, xm[size_t(i)] -= 1e-6;
    const double g_ln = (ln_loss(xp) - ln_loss(xm)) / 2e-6, g_rms = (rms_loss(xp) - rms_loss(xm)) / 2e-6;
    const float xi = float(x[size_t(i)]), wi = float(w[size_t(i)]), di = float(dy[size_t(i)]);
    EXPECT_NEAR(km::layernorm_dx(xi, di, wi, float(m), rstd, float(a / C), float(bb / C)), g_ln, 1e-4) << i;
    EXPECT_NEAR(km::rmsnorm_dx(xi, di, wi, rrms, c), g_rms, 1e-4) << i;
  }
  EXPECT_NEAR(km::layernorm_apply(1.5f, 0.5f, 2.0f, 3.0f, 0.25f), 6.25f, 1e-6);
  EXPECT_NEAR(km::rmsnorm_apply(1.5f, 2.0f, 3.0f), 9.0f, 1e-6);
}

TEST(KernelMath, RopeRotatesAndItsBackwardInverts) {
  const int D = 16;
  for (int32_t pos : {0, 1, 7, 300, 4095}) {
    for (int i = 0; i < D / 2; ++i) {
      const float inv = km::rope_inv_freq(i, D, 10000.0f);
      EXPECT_NEAR(inv, std::pow(10000.0, -2.0 * i / D), 1e-6 * std::pow(10000.0, -2.0 * i / D));
      float c, s, ci, si;
      km::rope_cos_sin(pos, inv, 1.0f, &c, &s);
      km::rope_cos_sin(pos, inv, -1.0f, &ci, &si);
      EXPECT_NEAR(c, std::cos(double(float(pos) * inv)), 1e-6);
      EXPECT_NEAR(s, std::sin(double(float(pos) * inv)), 1e-6);
      float a = 0.3f, b = -1.2f;
      km::rope_rotate(&a, &b, c, s);
      EXPECT_NEAR(a * a + b * b, 0.09 + 1.44, 1e-5);  // a rotation
      km::rope_rotate(&a, &b, ci, si);
      EXPECT_NEAR(a, 0.3f, 1e-5);
      EXPECT_NEAR(b, -1.2f, 1e-5);
    }
  }
}

TEST(KernelMath, OnlineSoftmaxMergeEqualsOneSoftmax) {
  // two blocks of scores; merging their (out, lse) equals the softmax over both
  const std::vector<double> s1 = {0.3, -1.0, 2.0}, s2 = {1.5, -0.2}, v1 = {1, 2, 3}, v2 = {-4, 5};
  auto block = [](const std::vector<double>& s, const std::vector<double>& v, double* out) {
    double m = -1e300, l = 0, acc = 0;
    for (double x : s) m = std::max(m, x);
    for (size_t j = 0; j < s.size(); ++j) l += std::exp(s[j] - m), acc += std::exp(s[j] - m) * v[j];
    *out = acc / l;
    return std::pair<double, double>(m + std::log(l), l);
  };
  double o1, o2;
  const auto [lse1, l1] = block(s1, v1, &o1);
  const auto [lse2, l2] = block(s2, v2, &o2);
  float wa, wb;
  const float lnew = km::lse_merge(float(lse1), float(lse2), 1.0f, &wa, &wb);
  std::vector<double> s = s1, v = v1;
  s.insert(s.end(), s2.begin(), s2.end());
  v.insert(v.end(), v2.begin(), v2.end());
  double o;
  const double lse = block(s, v, &o).first;
  EXPECT_NEAR(lnew, lse, 1e-6);
  EXPECT_NEAR(o1 * wa + o2 * wb, o, 1e-6);
  // no visible key in the first block: the second one alone
  const float l_only = km::lse_merge(-std::numeric_limits<float>::infinity(), float(lse2), 1.0f, &wa, &wb);
  EXPECT_NEAR(l_only, lse2, 1e-6);
  EXPECT_EQ(wa, 0.0f);
  EXPECT_TRUE(km::attn_visible(3, 3));
  EXPECT_FALSE(km::attn_visible(4, 3));
  EXPECT_FLOAT_EQ(km::attn_dscore(0.5f, 2.0f, 0.5f, 0.25f), 0.1875f);
}

TEST(KernelMath, SoftmaxCrossEntropyAndRouterOrder) {
  EXPECT_FLOAT_EQ(km::xent_grad(2.0f, 0.25f, 0.5f), 0.25f);
  EXPECT_FLOAT_EQ(km::softmax_backward(0.2f, 3.0f, 1.0f), 0.4f);
  // strict total order: larger first, ties to the lower index
  EXPECT_TRUE(km::topk_before(2.0f, 5, 1.0f, 0));
  EXPECT_TRUE(km::topk_before(1.0f, 0, 1.0f, 1));
  EXPECT_FALSE(km::topk_before(1.0f, 1, 1.0f, 0));
  EXPECT_FALSE(km::topk_before(1.0f, 1, 1.0f, 1));
}

TEST(KernelMath, AdamWMatchesTorchFormula) {
  float p = 0.5f, m = 0, v = 0;
  double pd = 0.5, md = 0, vd = 0;
  const double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
  for (int step = 1; step <= 5; ++step) {
    const double g = 0.1 * step - 0.25;
    km::adamw_update(&p, float(g), &m, &v, km::adamw_consts(float(lr), float(b1), float(b2), float(eps), float(wd), step));
    pd *= 1 - lr * wd;
    md = b1 * md + (1 - b1) * g;
    vd = b2 * vd + (1 - b2) * g * g;
    const double mhat = md / (1 - std::pow(b1, step)), vhat = vd / (1 - std::pow(b2, step));
    pd -= lr * mhat / (std::sqrt(vhat) + eps);
    EXPECT_NEAR(p, pd, 2e-6) << step;
    EXPECT_NEAR(m, md, 1e-7);
    EXPECT_NEAR(v, vd, 1e-8);
  }
}

// ---------------------------------------------------------------------------------------------
// launch configurations

TEST(LaunchConfig, ElementwiseAndRows) {
  EXPECT_EQ(gpu::elementwise_launch(0).grid, 0);
  EXPECT_EQ(gpu::elementwise_launch(1).grid, 1);
  EXPECT_EQ(gpu::elementwise_launch(256).grid, 1);
  EXPECT_EQ(gpu::elementwise_launch(257).grid, 2);
  EXPECT_EQ(gpu::elementwise_launch(int64_t(1) << 40).grid, gpu::kMaxGridX);  // grid-stride covers the rest
  EXPECT_EQ(gpu::warp_per_row_launch(0).grid, 0);
  EXPECT_EQ(gpu::warp_per_row_launch(8).grid, 1);
  EXPECT_EQ(gpu::warp_per_row_launch(9).grid, 2);
  EXPECT_EQ(gpu::warp_per_row_launch(9).rows_per_block * gpu::kWarp, gpu::warp_per_row_launch(9).block);
  EXPECT_EQ(gpu::block_per_row_launch(5, 100).grid, 5);
  EXPECT_EQ(gpu::block_per_row_launch(5, 100).block, 256);
  EXPECT_EQ(gpu::block_per_row_launch(5, 50000).block, 1024);
  for (int64_t n : {int64_t(1), int64_t(2047), int64_t(1) << 20, int64_t(1) << 33}) {
    const auto r = gpu::reduce_launch(n);
    EXPECT_GE(r.grid, 1);
    EXPECT_LE(r.grid, 1024);  // the backend's partials buffer holds 1024 doubles
  }
  EXPECT_EQ(gpu::reduce_launch(0).grid, 0);
}

TEST(LaunchConfig, ColumnReductionCoversEveryRowOnce) {
  for (int64_t M : {1, 7, 64, 65, 1000, 4096, 100003})
    for (int64_t N : {1, 31, 32, 33, 768, 50257}) {
      const auto l = gpu::column_reduce_launch(M, N);
      EXPECT_GE(l.chunks * l.rows_per_chunk, M) << M << "x" << N;
      EXPECT_LT((l.chunks - 1) * l.rows_per_chunk, M) << M << "x" << N;  // no empty chunk
      EXPECT_GE(l.grid_x * gpu::kColTile, N);
      EXPECT_LE(l.chunks, gpu::kMaxGridYZ);
      EXPECT_GE(l.scratch_elems(), l.chunks * N);
    }
  EXPECT_EQ(gpu::column_reduce_launch(0, 5).chunks, 0);
}

TEST(LaunchConfig, AttentionTilesAndLimits) {
  using gpu::AttnKernel;
  auto f = gpu::attention_launch(AttnKernel::forward, 2, 100, 100, 8, 2, 64, 64, 0);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_EQ(f.grid_x, 4);  // ceil(100 / 32)
  EXPECT_EQ(f.grid_y, 8);
  EXPECT_EQ(f.grid_z, 2);
  EXPECT_EQ(f.dim_chunks, 4);
  EXPECT_EQ(f.smem_bytes, 4 * (32 * 64 + 32 * 65 + 32 * 64));
  auto kv = gpu::attention_launch(AttnKernel::backward_dkv, 2, 100, 70, 8, 2, 128, 128, 0);
  ASSERT_TRUE(kv.ok);
  EXPECT_EQ(kv.grid_x, 3);  // key tiles
  EXPECT_EQ(kv.grid_y, 2);  // kv heads
  EXPECT_EQ(kv.smem_bytes, 4 * (32 * 129 * 2 + 32 * 128 * 2));
  auto dq = gpu::attention_launch(AttnKernel::backward_dq, 1, 5, 5, 1, 1, 256, 192, 0);
  ASSERT_TRUE(dq.ok);
  EXPECT_EQ(dq.dim_chunks, 8);
  EXPECT_EQ(dq.smem_bytes, 4 * (32 * 256 + 32 * 192 + 32 * 257 + 32 * 193));
  // head dims 256 fit the opt-in shared memory of A100 (163 KiB) and H100/B200 (227 KiB)
  for (auto k : {AttnKernel::forward, AttnKernel::backward_dq, AttnKernel::backward_dkv})
    EXPECT_TRUE(gpu::attention_launch(k, 1, 64, 64, 1, 1, 256, 256, 163 * 1024).ok);
  EXPECT_FALSE(gpu::attention_launch(AttnKernel::forward, 1, 64, 64, 1, 1, 512, 512, 0).ok);
  EXPECT_FALSE(gpu::attention_launch(AttnKernel::forward, 1, 64, 64, 6, 4, 64, 64, 0).ok);  // 6 % 4
  auto small = gpu::attention_launch(AttnKernel::backward_dkv, 1, 64, 64, 1, 1, 256, 256, 48 * 1024);
  EXPECT_FALSE(small.ok);
  EXPECT_NE(small.error.find("shared memory"), std::string::npos);
  EXPECT_FALSE(gpu::attention_launch(AttnKernel::forward, 70000, 64, 64, 1, 1, 64, 64, 0).ok);  // gridDim.z
}

// The opt-in limit per block (cudaDevAttrMaxSharedMemoryPerBlockOptin) covers static + dynamic shared
// memory: cudaFuncSetAttribute(MaxDynamicSharedMemorySize, optin) fails on every GPU as soon as the
// kernel has any __shared__ array (the attention kernels have qp/kp/ls/dl), and the launch check must
// use what is left after them.
TEST(LaunchConfig, AttentionDynamicSharedMemoryExcludesStaticArrays) {
  using gpu::AttnKernel;
  const int64_t a100 = 166912, h100 = 232448;  // opt-in bytes per block of sm_80 and sm_90/sm_100
  const int64_t static_bytes = 528;            // qp, kp, ls, dl, s_qmax of the backward kernels (ptxas -v, sm_80)
  EXPECT_EQ(gpu::attention_dynamic_smem_limit(a100, static_bytes), a100 - static_bytes);
  EXPECT_LT(gpu::attention_dynamic_smem_limit(h100, static_bytes), h100);
  EXPECT_EQ(gpu::attention_dynamic_smem_limit(100, 200), 0);
  // Llama's head dim 128 already needs more than the 48 KiB default (so the opt-in is required) ...
  EXPECT_GT(gpu::attention_launch(AttnKernel::forward, 1, 64, 64, 1, 1, 128, 128, 0).smem_bytes, 48 * 1024);
  // ... and head dim 256 still fits an A100 after the static arrays
  for (auto k : {AttnKernel::forward, AttnKernel::backward_dq, AttnKernel::backward_dkv}) {
    const auto l = gpu::attention_launch(k, 1, 64, 64, 1, 1, 256, 256, gpu::attention_dynamic_smem_limit(a100, static_bytes));
    EXPECT_TRUE(l.ok) << l.error;
    EXPECT_LE(l.smem_bytes + static_bytes, a100);
  }
}

TEST(LaunchConfig, BlockPerRowStaysWithinTheKernelsLaunchBounds) {
  for (int64_t len : {int64_t(1), int64_t(2047), int64_t(2048), int64_t(8191), int64_t(8192), int64_t(50304), int64_t(1) << 20}) {
    const auto l = gpu::block_per_row_launch(3, len);
    EXPECT_LE(l.block, gpu::kMaxRowBlock) << len;
    EXPECT_EQ(l.block % gpu::kWarp, 0) << len;  // block_sum/block_max assume whole warps
  }
  EXPECT_EQ(gpu::block_per_row_launch(3, 50304).block, gpu::kMaxRowBlock);
}

TEST(LaunchConfig, PointerAlignmentAndSizeClasses) {
  alignas(256) static float buf[128];
  EXPECT_EQ(gpu::pointer_alignment(buf), 256);
  EXPECT_EQ(gpu::pointer_alignment(buf + 1), 4);
  EXPECT_EQ(gpu::pointer_alignment(buf + 4), 16);
  EXPECT_EQ(gpu::pointer_alignment(buf + 32), 128);
  using S = gpu::SizeClasses;
  EXPECT_EQ(S::small_bin(1), 0);
  EXPECT_EQ(S::small_bin(256), 0);
  EXPECT_EQ(S::small_bin(257), 1);
  EXPECT_EQ(S::small_bin(int64_t(1) << 20), 12);
  EXPECT_EQ(S::small_bin((int64_t(1) << 20) + 1), -1);
  EXPECT_EQ(S::rounded(1000), 1024);
  EXPECT_EQ(S::rounded((int64_t(1) << 20) + 1), int64_t(2) << 20);
  EXPECT_EQ(S::rounded(int64_t(5) << 20), int64_t(6) << 20);
  EXPECT_TRUE(S::large_fits(int64_t(8) << 20, int64_t(8) << 20));
  EXPECT_TRUE(S::large_fits(int64_t(10) << 20, int64_t(8) << 20));
  EXPECT_FALSE(S::large_fits(int64_t(12) << 20, int64_t(8) << 20));  // > 25% waste
  EXPECT_FALSE(S::large_fits(int64_t(6) << 20, int64_t(8) << 20));
  EXPECT_EQ(S::kSlab % S::bin_bytes(12), 0);
}

// ---------------------------------------------------------------------------------------------
// DevicePool bookkeeping on host memory through an injected allocator

namespace {
// Host memory standing in for a device of `capacity` bytes; counts live raw allocations.
class FakeDevice final : public gpu::DeviceAllocator {
 public:
  explicit FakeDevice(int64_t capacity, int64_t* live) : capacity_(capacity), live_(live) {}
  void* allocate(int64_t bytes) override {
    if (used_ + bytes > capacity_) return nullptr;
    void* p = std::aligned_alloc(256, size_t(bytes));
    sizes_[p] = bytes;
    used_ += bytes;
    ++*live_;
    return p;
  }
  void free(void* p) override {
    used_ -= sizes_.at(p);
    sizes_.erase(p);
    --*live_;
    std::free(p);
  }
  std::pair<int64_t, int64_t> device_memory() override { return {capacity_ - used_, capacity_}; }

 private:
  int64_t capacity_, used_ = 0;
  int64_t* live_;
  std::map<void*, int64_t> sizes_;
};
struct OomSeen {};  // thrown by the test's handler (the backend's handler ends the job instead)
}  // namespace

TEST(DevicePool, CountsEveryBlockReusesFreedOnesAndReportsOutOfMemory) {
  constexpr int64_t MiB = int64_t(1) << 20;
  int64_t live = 0;
  gpu::OutOfMemory seen;
  {
    gpu::DevicePool pool(std::make_unique<FakeDevice>(64 * MiB, &live), [&](const gpu::OutOfMemory& o) {
      seen = o;
      throw OomSeen{};
    });
    // small blocks share a 2 MiB slab; allocated counts the rounded block, reserved the slab
    void* a = pool.allocate(1000);
    void* b = pool.allocate(1000);
    EXPECT_EQ(pool.allocated_bytes(), 2048);
    EXPECT_EQ(pool.reserved_bytes(), 2 * MiB);
    EXPECT_EQ(live, 1);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u);
    EXPECT_NE(a, b);
    pool.release(a);
    EXPECT_EQ(pool.allocated_bytes(), 1024);
    EXPECT_EQ(pool.allocate(900), a);  // the freed block of the same bin comes back first
    // large blocks: rounded to 2 MiB, cached on release, reused within 25 % of the size
    void* big = pool.allocate(5 * MiB);
    EXPECT_EQ(pool.allocated_bytes(), 2048 + 6 * MiB);
    pool.release(big);
    EXPECT_EQ(pool.allocated_bytes(), 2048);
    EXPECT_EQ(pool.reserved_bytes(), 8 * MiB);  // cached, still held
    EXPECT_EQ(pool.allocate(6 * MiB), big);
    pool.release(big);
    void* other = pool.allocate(2 * MiB);  // 6 MiB would waste > 25 %: a new block
    EXPECT_NE(other, big);
    EXPECT_EQ(pool.peak_allocated_bytes(), 2048 + 6 * MiB);
    EXPECT_EQ(pool.peak_reserved_bytes(), 10 * MiB);
    // out of memory: the cache is returned first, then the handler sees the numbers
    EXPECT_THROW(pool.allocate(61 * MiB), OomSeen);
    EXPECT_EQ(seen.request, 62 * MiB);  // rounded to 2 MiB
    EXPECT_EQ(seen.allocated, 2048 + 2 * MiB);
    EXPECT_EQ(seen.reserved, 4 * MiB);  // the slab and the live 2 MiB block; the cached 6 MiB went back
    EXPECT_EQ(seen.device_free, 60 * MiB);
    EXPECT_EQ(seen.device_total, 64 * MiB);
    void* fits = pool.allocate(58 * MiB);  // after the cache went back, this fits
    EXPECT_NE(fits, nullptr);
    pool.release(fits);
    pool.release(other);
    pool.release(a);
    pool.release(b);
    EXPECT_EQ(pool.allocated_bytes(), 0);
    pool.empty_cache();
    EXPECT_EQ(pool.reserved_bytes(), 2 * MiB);  // slabs stay
  }
  EXPECT_EQ(live, 0);  // the pool's destructor returned everything
  const std::string m = gpu::out_of_memory_message(seen, int64_t(3) << 30);
  EXPECT_NE(m.find("allocating 0.06 GiB"), std::string::npos) << m;
  EXPECT_NE(m.find("0.06 GiB free of 0.06 GiB"), std::string::npos) << m;
  EXPECT_NE(m.find("the plan predicts 3.00 GiB per GPU"), std::string::npos) << m;
  EXPECT_NE(gpu::out_of_memory_message(seen, 0).find("unknown peak"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// the CUDA profile's rows over the backend's own ops: which layer op becomes which backend call

#if defined(MPLAN_HAVE_BACKEND_OP_KERNELS)
TEST(BackendOpKernels, LayerOpsMapToTheBackendCallsTheLayersMake) {
  ModelSpec m;
  m.num_layers = 1;
  m.hidden_size = 4096;
  m.ffn_hidden_size = 14336;
  m.num_attention_heads = 32;
  m.num_query_groups = 8;
  m.kv_channels = 128;
  m.vocab_size = 32000;
  m.norm = NormKind::rmsnorm;
  m.activation = Activation::swiglu;
  OpContext c;
  c.seq = 2048;
  c.precision = Precision::bf16;
  std::map<std::string, OpKernelCall> calls;
  for (const Op& op : layer_ops(m, 0, c)) calls[op.name] = op_kernel_call(op, m, 2048);
  ASSERT_TRUE(calls.count("attn_core"));
  const OpKernelCall& a = calls["attn_core"];
  EXPECT_EQ(a.call, BackendCall::attention);
  EXPECT_TRUE(a.has_backward);
  EXPECT_EQ(a.N, 2048);
  EXPECT_EQ(a.H, 32);
  EXPECT_EQ(a.Hkv, 8);  // GQA as the layers run it
  EXPECT_EQ(a.D, 128);
  EXPECT_EQ(calls["attn_norm"].call, BackendCall::rmsnorm);
  EXPECT_EQ(calls["mlp_norm"].call, BackendCall::rmsnorm);
  EXPECT_EQ(calls["attn_norm"].C, 4096);
  EXPECT_EQ(calls["act"].call, BackendCall::act);
  EXPECT_EQ(calls["act"].F, 14336);
  EXPECT_EQ(calls["attn_residual"].call, BackendCall::add);
  EXPECT_FALSE(calls["attn_residual"].has_backward);
  EXPECT_EQ(calls["rope"].call, BackendCall::rope);
  EXPECT_EQ(calls["qkv_gemm"].call, BackendCall::none);  // GEMMs are the cuBLASLt grid's rows
  m.norm = NormKind::layernorm;
  m.position_embedding = PositionEmbedding::learned;
  Op norm;
  norm.id = OpId::attn_norm;  // what op_kernel_call switches on
  norm.name = "attn_norm";
  EXPECT_EQ(op_kernel_call(norm, m, 16).call, BackendCall::layernorm);
  Op rope;
  rope.id = OpId::rope;
  rope.name = "rope";
  EXPECT_EQ(op_kernel_call(rope, m, 16).call, BackendCall::none);  // no RoPE in a learned-position model
}
#endif

// ---------------------------------------------------------------------------------------------
// GEMM mapping: a naive column-major GEMM fed with the mapped operands must give the row-major result

namespace {
// C (m, n) = op(A) op(B) + beta C, column-major with leading dimensions
void colmajor_gemm(const gpu::ColMajorGemm& g, const float* A, const float* B, float beta, float* C) {
  for (int64_t j = 0; j < g.n; ++j)
    for (int64_t i = 0; i < g.m; ++i) {
      double s = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        const float a = g.trans_a ? A[i * g.lda + p] : A[p * g.lda + i];
        const float b = g.trans_b ? B[p * g.ldb + j] : B[j * g.ldb + p];
        s += double(a) * b;
      }
      C[j * g.ldc + i] = float(s + beta * C[j * g.ldc + i]);
    }
}
// expects C (R, Cc) == init + sum_p a(r, p) b(p, c)
template <class A, class B>
void expect_product(const std::vector<float>& C, int64_t R, int64_t Cc, int64_t P, double init, A a, B b) {
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < Cc; ++c) {
      double s = init;
      for (int64_t p = 0; p < P; ++p) s += double(a(r, p)) * b(p, c);
      EXPECT_NEAR(C[size_t(r * Cc + c)], s, 1e-5);
    }
}
}  // namespace

TEST(GemmMapping, RowMajorOpsThroughColumnMajorCalls) {
  const int64_t M = 5, K = 7, N = 3;
  const auto inp = test::randv(M * K, 1), W = test::randv(N * K, 2), dout = test::randv(M * N, 3);
  auto run = [&](gpu::RowMajorGemm kind, const std::vector<float>& op0, const std::vector<float>& op1, std::vector<float> C,
                 float beta) {
    const auto g = gpu::gemm_mapping(kind, M, K, N);
    const float* ops[2] = {op0.data(), op1.data()};
    colmajor_gemm(g, ops[g.a_operand], ops[g.b_operand], beta, C.data());
    return C;
  };
  auto in = [&](int64_t m, int64_t k) { return inp[size_t(m * K + k)]; };
  auto w = [&](int64_t n, int64_t k) { return W[size_t(n * K + k)]; };
  auto d = [&](int64_t m, int64_t n) { return dout[size_t(m * N + n)]; };
  // forward: out (M, N) = inp @ W^T
  auto out = run(gpu::RowMajorGemm::forward, inp, W, std::vector<float>(size_t(M * N), 0), 0);
  expect_product(out, M, N, K, 0, in, [&](int64_t k, int64_t n) { return w(n, k); });
  // backward input: dinp (M, K) = dout @ W, accumulated onto 1
  auto dinp = run(gpu::RowMajorGemm::backward_input, dout, W, std::vector<float>(size_t(M * K), 1.0f), 1);
  expect_product(dinp, M, K, N, 1, d, w);
  // backward weight: dW (N, K) += dout^T @ inp
  auto dW = run(gpu::RowMajorGemm::backward_weight, dout, inp, std::vector<float>(size_t(N * K), 0.5f), 1);
  expect_product(
      dW, N, K, M, 0.5, [&](int64_t n, int64_t m) { return d(m, n); }, in);
}

// ---------------------------------------------------------------------------------------------
// NCCL process groups = RankGrid groups

TEST(NcclGroups, PlanMatchesRankGridForEveryRank) {
  const std::vector<ParallelConfig> layouts = [] {
    std::vector<ParallelConfig> v;
    for (const auto& lc : test::equivalence_layouts()) {
      auto plan = plan_from_json(test::plan_json(test::tiny_model(lc.model), lc.parallel));
      if (plan) v.push_back(plan.value().parallel);
    }
    return v;
  }();
  ASSERT_GE(layouts.size(), 20u);
  for (const ParallelConfig& p : layouts) {
    RankGrid grid(p);
    std::map<std::pair<std::string, int>, std::vector<int>> by_color;
    for (int r = 0; r < p.world_size; ++r) {
      const auto plan = process_group_plan(p, r);
      ASSERT_EQ(plan.size(), 11u);
      const char* names[] = {"world", "tp", "cp", "dp", "pp", "tp_cp", "dp_cp", "ep", "etp", "edp", "embedding"};
      for (size_t i = 0; i < plan.size(); ++i) {
        const GroupSplit& g = plan[i];
        EXPECT_EQ(g.name, names[i]);  // the slot order make_nccl_process_groups fills
        if (g.color < 0) continue;
        ASSERT_LT(size_t(g.key), g.members.size());
        EXPECT_EQ(g.members[size_t(g.key)], r) << g.name;
        auto [it, fresh] = by_color.emplace(std::make_pair(g.name, g.color), g.members);
        if (!fresh) {
          EXPECT_EQ(it->second, g.members) << g.name << " color " << g.color;
        }
      }
      // sizes and RankGrid's own view
      EXPECT_EQ(plan[1].members, grid.group_of(r, Dim::tp));
      EXPECT_EQ(plan[2].members, grid.group_of(r, Dim::cp));
      EXPECT_EQ(plan[3].members, grid.group_of(r, Dim::dp));
      EXPECT_EQ(plan[4].members, grid.group_of(r, Dim::pp));
      EXPECT_EQ(int(plan[5].members.size()), p.tp * p.cp);
      EXPECT_EQ(int(plan[6].members.size()), p.cp * p.dp());
      EXPECT_EQ(plan[7].members, grid.group_of(r, Dim::ep));
      EXPECT_EQ(plan[8].members, grid.group_of(r, Dim::etp));
      EXPECT_EQ(plan[9].members, grid.group_of(r, Dim::edp));
      const RankCoord c = grid.coord(r);
      const bool emb = p.pp > 1 && (c.pp == 0 || c.pp == p.pp - 1);
      EXPECT_EQ(plan[10].color >= 0, emb);
      if (emb) {
        EXPECT_EQ(plan[10].members.front(), grid.rank_of_dense(c.tp, c.cp, c.dp, 0));
        EXPECT_EQ(plan[10].members.back(), grid.rank_of_dense(c.tp, c.cp, c.dp, p.pp - 1));
      }
    }
    // every rank is in exactly one group of each kind
    std::map<std::string, std::set<int>> covered;
    for (const auto& [key, members] : by_color)
      for (int m : members) EXPECT_TRUE(covered[key.first].insert(m).second) << key.first << " rank " << m;
    for (const char* n : {"world", "tp", "cp", "dp", "pp", "tp_cp", "dp_cp", "ep", "etp", "edp"})
      EXPECT_EQ(int(covered[n].size()), p.world_size) << n;
  }
}

TEST(NcclComm, HostPointersAreNotDevicePointers) {
  std::vector<float> host(16);
  EXPECT_FALSE(is_device_pointer(host.data()));
  EXPECT_FALSE(is_device_pointer(nullptr));
}

// ---------------------------------------------------------------------------------------------
// per-op tags

namespace {
struct FakeTagger final : OpTagger {
  std::vector<std::string> log;
  void begin(const char* op) override { log.push_back(std::string("+") + op); }
  void end() override { log.push_back("-"); }
  std::map<std::string, double> take_step_seconds() override { return {{"qkv_gemm", 0.25}, {"absent", 1.0}}; }
};
}  // namespace

TEST(OpTags, TimersCallTheTaggerAndTakeItsDeviceTimes) {
  OpTimers t;
  FakeTagger tag;
  t.set_tagger(&tag);
  {
    OpTimers::Scope a(t, "qkv_gemm");
    OpTimers::Scope b(t, "attn_core");
  }
  EXPECT_EQ(tag.log, (std::vector<std::string>{"+qkv_gemm", "+attn_core", "-", "-"}));
  t.override_seconds(tag.take_step_seconds());
  EXPECT_EQ(t.step().at("qkv_gemm").seconds, 0.25);
  EXPECT_EQ(t.step().at("qkv_gemm").calls, 1);
  EXPECT_EQ(t.step().count("absent"), 0u);  // only ops that ran
  t.set_tagger(nullptr);
  { OpTimers::Scope c(t, "fc1_gemm"); }
  EXPECT_EQ(tag.log.size(), 4u);
}

#if defined(MPLAN_HAVE_CUPTI_OP_TIMER)

TEST(OpTags, CuptiBufferToPerOpKernelTime) {
  gpu::OpIds ids;
  const uint64_t qkv = ids.id("qkv_gemm"), attn = ids.id("attn_core");
  EXPECT_EQ(qkv, 1u);
  EXPECT_EQ(attn, 2u);
  EXPECT_EQ(ids.id("qkv_gemm"), 1u);  // one id per name, stable
  test::SyntheticBuffer b;
  // qkv_gemm launched twice in the step (forward, backward): 10 us + 30 us
  b.add(test::ext(qkv, 100));
  b.add(test::api(100));
  b.add(test::kernel(100, 0, 1000, 11000, "gemm_fwd"));
  b.add(test::ext(qkv, 101));
  b.add(test::api(101));
  b.add(test::kernel(101, 0, 50000, 80000, "gemm_dgrad"));
  // attn_core: two kernels under one call (forward + prepare): 5 us + 2 us
  b.add(test::ext(attn, 102));
  b.add(test::api(102));
  b.add(test::kernel(102, 0, 20000, 25000, "attn_fwd"));
  b.add(test::kernel(102, 0, 26000, 28000, "attn_prepare"));
  // an untagged kernel (outside any op scope) and a foreign external id are ignored
  b.add(test::api(103));
  b.add(test::kernel(103, 0, 0, 1000000, "untagged"));
  b.add(test::ext(999, 104));
  b.add(test::kernel(104, 0, 0, 5000, "foreign"));
  cupti::ActivityCollector c;
  EXPECT_EQ(c.add_buffer(b.data(), b.size(), test::synthetic_walker), 14u);
  const auto sec = gpu::op_seconds_from_spans(c.spans(), ids.names());
  ASSERT_EQ(sec.size(), 2u);
  EXPECT_NEAR(sec.at("qkv_gemm"), 40e-6, 1e-12);
  EXPECT_NEAR(sec.at("attn_core"), 7e-6, 1e-12);
  // MPLAN_CUPTI_KERNELS: the same step, kernel by kernel, with what ran outside every op
  const nlohmann::json k = nlohmann::json::parse(gpu::kernel_breakdown_json(c, ids.names()));
  EXPECT_NEAR(k["ops"]["qkv_gemm"]["gemm_dgrad"]["time_s"].get<double>(), 30e-6, 1e-12);
  EXPECT_EQ(k["ops"]["attn_core"]["attn_prepare"]["launches"].get<int>(), 1);
  EXPECT_EQ(k["ops"]["attn_core"].size(), 2u);
  EXPECT_NEAR(k["outside_ops"]["untagged"]["time_s"].get<double>(), 1e-3, 1e-12);
  EXPECT_EQ(k["outside_ops"].count("gemm_fwd"), 0u);
}
#endif

// ---------------------------------------------------------------------------------------------
// backend selection without a device

TEST(BackendFactory, CudaWithoutADeviceIsRefusedWithAMessage) {
  auto plan = plan_from_json(test::plan_json(test::tiny_model("gpt"), {{"world_size", 1}}));
  ASSERT_TRUE(plan) << plan.error().message();
  EXPECT_TRUE(cuda_backend_built());
  auto cpu = make_backend("cpu", plan.value(), MPI_COMM_SELF);
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu.value().backend->name(), "cpu");
  EXPECT_EQ(cpu.value().tagger, nullptr);
  auto bad = make_backend("tpu", plan.value(), MPI_COMM_SELF);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("cpu or cuda"), std::string::npos);
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  auto cuda = make_backend("cuda", plan.value(), MPI_COMM_SELF);
  ASSERT_FALSE(cuda);
  EXPECT_NE(cuda.error().message().find("no CUDA device"), std::string::npos) << cuda.error().message();
}
