// The CPU profiler's kernels are correct (backward = numerical gradient of forward), its timing
// loop behaves, and a tiny profile lands in the database with the vocabulary's names.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "core/ops.h"
#include "core/stats.h"
#include "profiles/cost_eval.h"
#include "profiles/cpu_kernels.h"
#include "profiles/cpu_profiler.h"
#include "tests/random_values.h"

using namespace mplan;
using namespace mplan::profiles;

namespace {

using mplan::test::randv;

// Loss = sum(out * w) for a fixed random w; checks d loss / d input of a few elements.
template <class Fwd>
double numeric_grad(Fwd fwd, std::vector<float>& x, size_t i, const std::vector<float>& w) {
  const float h = 1e-2f;
  float keep = x[i];
  x[i] = keep + h;
  auto a = fwd();
  x[i] = keep - h;
  auto b = fwd();
  x[i] = keep;
  double s = 0;
  for (size_t j = 0; j < w.size(); ++j) s += (double(a[j]) - double(b[j])) * w[j];
  return s / (2 * h);
}

}  // namespace

TEST(CpuKernels, AttentionBackwardMatchesNumericalGradient) {
  const int64_t B = 1, H = 2, T = 5, D = 4, n = B * H * T * D;
  auto q = randv(n, 1), k = randv(n, 2), v = randv(n, 3), w = randv(n, 4);
  std::vector<float> out(n), lse(B * H * T), s1(T * T), s2(T * T), rd(T), dq(n), dk(n), dv(n);
  auto fwd = [&] {
    std::vector<float> o(n);
    cpu::attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), s1.data(), B, H, T, D);
    return o;
  };
  out = fwd();
  cpu::attention_backward(dq.data(), dk.data(), dv.data(), w.data(), q.data(), k.data(), v.data(), out.data(), lse.data(),
                          s1.data(), s2.data(), rd.data(), B, H, T, D);
  for (size_t i : {size_t(0), size_t(7), size_t(23), size_t(38)}) {
    EXPECT_NEAR(dq[i], numeric_grad(fwd, q, i, w), 2e-2) << "dq " << i;
    EXPECT_NEAR(dk[i], numeric_grad(fwd, k, i, w), 2e-2) << "dk " << i;
    EXPECT_NEAR(dv[i], numeric_grad(fwd, v, i, w), 2e-2) << "dv " << i;
  }
  // causality: the first query attends only to itself
  for (int64_t d = 0; d < D; ++d) EXPECT_NEAR(out[d], v[d], 1e-5);
}

TEST(CpuKernels, LayerNormAndGeluBackwardMatchNumericalGradient) {
  const int64_t N = 3, C = 8;
  auto x = randv(N * C, 5), wt = randv(C, 6), bias = randv(C, 7), w = randv(N * C, 8);
  std::vector<float> mean(N), rstd(N), dx(N * C, 0), dw(C, 0), db(C, 0);
  auto fwd = [&] {
    std::vector<float> y(N * C);
    cpu::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), wt.data(), bias.data(), N, C);
    return y;
  };
  fwd();
  cpu::layernorm_backward(dx.data(), dw.data(), db.data(), w.data(), x.data(), wt.data(), mean.data(), rstd.data(), N, C);
  for (size_t i : {size_t(0), size_t(9), size_t(20)}) EXPECT_NEAR(dx[i], numeric_grad(fwd, x, i, w), 1e-2);

  std::vector<float> gx = randv(10, 9), gw = randv(10, 10), gd(10, 0);
  auto gfwd = [&] {
    std::vector<float> y(10);
    cpu::gelu_forward(y.data(), gx.data(), 10);
    return y;
  };
  cpu::gelu_backward(gd.data(), gx.data(), gw.data(), 10);
  for (size_t i : {size_t(1), size_t(6)}) EXPECT_NEAR(gd[i], numeric_grad(gfwd, gx, i, gw), 1e-3);
}

TEST(CpuKernels, CrossEntropyGradientIsSoftmaxMinusOnehot) {
  const int64_t N = 2, V = 5;
  auto logits = randv(N * V, 11);
  std::vector<int> tgt = {1, 4};
  std::vector<float> losses(N), d = logits;
  cpu::crossentropy_forward(losses.data(), logits.data(), tgt.data(), N, V);
  cpu::crossentropy_backward(d.data(), tgt.data(), 1.0f, N, V);
  for (int64_t i = 0; i < N; ++i) {
    double s = 0;
    for (int64_t j = 0; j < V; ++j) s += d[i * V + j];
    EXPECT_NEAR(s, 0.0, 1e-5);  // softmax sums to one, minus the one-hot
    double z = 0;
    for (int64_t j = 0; j < V; ++j) z += std::exp(logits[i * V + j]);
    EXPECT_NEAR(losses[i], std::log(z) - logits[i * V + tgt[i]], 1e-4);
  }
}

TEST(CpuKernels, RopeBackwardInvertsForward) {
  auto x = randv(3 * 2 * 8, 12), y = x;
  cpu::rope_forward(y.data(), 3, 2, 8);
  cpu::rope_backward(y.data(), 3, 2, 8);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-5);
}

TEST(CpuProfiler, SummaryPercentiles) {
  stats::Summary s = stats::summarize({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_NEAR(s.p10, 1.4, 1e-12);
  EXPECT_NEAR(s.p90, 4.6, 1e-12);
}

TEST(CpuProfiler, TimingRepeatsFastKernelsAndCountsReps) {
  int calls = 0;
  RepPolicy p;
  p.warmup = 2, p.min_reps = 4, p.max_reps = 10, p.min_time_s = 0;
  Timing t = time_kernel([&] { ++calls; }, p);
  EXPECT_EQ(t.reps, 4);
  EXPECT_GT(calls, 2 + 1 + 4);  // fast kernel: several executions per timed repetition
  EXPECT_LE(t.p10_s, t.median_s);
  EXPECT_LE(t.median_s, t.p90_s);
}

TEST(CpuProfiler, PlanUsesVocabularyNamesAndCostModelConventions) {
  std::vector<KernelBatch> plan = cpu_kernel_plan(true);
  ASSERT_FALSE(plan.empty());
  const auto& vocab = op_vocabulary();
  std::set<std::string> seen;
  for (const auto& b : plan)
    for (const auto& c : b.make()) {
      seen.insert(c.row.op);
      EXPECT_TRUE(std::find(vocab.begin(), vocab.end(), c.row.op) != vocab.end()) << c.row.op;
      EXPECT_GT(c.row.flops + c.row.bytes, 0) << c.row.op;
      if (op_kind_of(c.row.op) == OpKind::gemm) EXPECT_DOUBLE_EQ(c.row.flops, 2.0 * c.row.m * c.row.n * c.row.k);
    }
  for (const char* op : {"qkv_gemm", "fc1_gemm", "fc2_gemm", "proj_gemm", "lm_head_gemm", "attn_core", "attn_norm", "act",
                         "cross_entropy", "embedding", "adamw", "rope", "attn_residual"})
    EXPECT_TRUE(seen.count(op)) << op;
}

TEST(CpuProfiler, TinyKernelProfileWritesRows) {
  auto db = ProfileDb::open(":memory:");
  ASSERT_TRUE(db);
  Device dev = cpu_device_row();
  dev.id = *db.value().add_device(dev);
  CpuProfileOptions o;
  o.quick = true;
  o.progress = false;
  auto r = profile_cpu_kernels(db.value(), dev, o);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_GT(r->kernel_rows, 50);
  EXPECT_GT(r->peak_gflops, 0.5);
  EXPECT_GT(r->memory_gbps, 0.1);
  auto devs = db.value().devices();
  EXPECT_GT(devs->front().peak_tflops.at("fp32"), 0);
  auto sessions = db.value().sessions();
  ASSERT_EQ(sessions->size(), 1u);
  EXPECT_EQ(sessions->front().status, "complete");
  auto kernels = db.value().kernels(dev.id);  // kept alive: the loop must not iterate a destroyed temporary
  ASSERT_TRUE(kernels);
  for (const auto& k : *kernels) {
    EXPECT_GT(k.median_us, 0);
    EXPECT_LE(k.p10_us, k.median_us);
    EXPECT_GE(k.reps, 3);
  }
}
