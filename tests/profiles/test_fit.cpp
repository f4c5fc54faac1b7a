// Calibration fit: measurements generated from known parameters with the cost model are recovered
// within 2%, on a GPU-like cluster (wave quantisation, FP8, hierarchical collectives) and on a
// local-cpu-like one.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/presets.h"
#include "profiles/cost_eval.h"
#include "profiles/fit.h"
#include "profiles/least_squares.h"

using namespace mplan;
using namespace mplan::profiles;

namespace {

CostParams truth_params() {
  CostParams p;
  p.hbm_eff = 0.83;
  p.kernel_overhead_us = 3.2;
  p.gemm_eff_max = 0.71;
  p.gemm_ramp_us = 3.7;
  p.precision_eff[Precision::bf16] = 1.0;
  p.precision_eff[Precision::fp8] = 0.77;
  p.attn_fwd_eff = 0.52;
  p.attn_bwd_eff = 0.38;
  p.nvlink_eff = 0.72;
  p.network_eff = 0.86;
  p.a2a_eff = 0.55;
  return p;
}

KernelRow kernel(const std::string& op, const std::string& pass, const std::string& dtype) {
  KernelRow r;
  r.op = op;
  r.pass = pass;
  r.dtype = dtype;
  r.reps = 5;
  return r;
}

// Rows of every class; times from the cost model with `truth` on `c`, times (1 + noise).
void synthesize(const ClusterSpec& c, const CostParams& truth, std::vector<KernelRow>& ks, std::vector<CollectiveRow>& cs,
                bool gpu, double noise) {
  std::mt19937 g(42);
  std::uniform_real_distribution<double> u(-noise, noise);
  int64_t id = 1;
  auto add_k = [&](KernelRow r) {
    r.id = id++;
    r.median_us = predict_kernel_s(r, c, truth) * 1e6 * (1 + u(g));
    r.p10_us = r.p90_us = r.median_us;
    ks.push_back(r);
  };
  for (double bytes : {2e4, 1e5, 1e6, 1e7, 1e8, 1e9})
    for (const char* op : {"attn_norm", "act", "cross_entropy", "adamw"}) {
      KernelRow r = kernel(op, "fwd", "bf16");
      r.bytes = bytes;
      add_k(r);
      r.pass = "bwd";
      r.bytes = 2 * bytes;
      add_k(r);
    }
  std::vector<std::string> dtypes = gpu ? std::vector<std::string>{"bf16", "fp8"} : std::vector<std::string>{"fp32"};
  for (const auto& dt : dtypes)
    for (int64_t m : {64, 512, 1000, 2048, 8192})
      for (int64_t n : {256, 1024, 3000, 12288})
        for (int64_t k : {512, 4096}) {
          KernelRow r = kernel("fc1_gemm", "fwd", dt);
          r.m = m, r.n = n, r.k = k, r.groups = 1;
          r.flops = 2.0 * m * n * k;
          add_k(r);
        }
  for (int64_t s : {512, 1024, 2048, 4096, 8192})
    for (const char* pass : {"fwd", "bwd"}) {
      KernelRow r = kernel("attn_core", pass, "bf16");
      r.batch = 1, r.heads = 32, r.q_len = s, r.kv_len = s, r.head_dim = 128, r.causal = true;
      double fwd = 2.0 * s * s * 32 * 256 * 0.5;
      r.flops = std::string(pass) == "fwd" ? fwd : 2 * fwd;
      add_k(r);
    }
  auto add_c = [&](const std::string& op, int n, int domains, int64_t bytes) {
    CollectiveRow r;
    r.id = id++;
    r.op = op;
    r.group_size = n;
    r.domains = domains;
    r.members_per_node = n / domains;
    r.bytes = bytes;
    r.reps = 5;
    r.median_us = predict_collective_s(r, c, truth) * 1e6 * (1 + u(g));
    cs.push_back(r);
  };
  for (const char* op : {"all_reduce", "all_gather", "reduce_scatter", "send_recv", "all_to_all"})
    for (int64_t b = 1024; b <= (int64_t(1) << 30); b *= 8) {
      for (int n : {2, 4, 8}) add_c(op, n, 1, b);
      if (gpu)
        for (int d : {2, 4}) add_c(op, 8 * d, d, b);
    }
}

void expect_close(double got, double want, const std::string& what, double tol = 0.02) {
  EXPECT_NEAR(got / want, 1.0, tol) << what << ": fitted " << got << ", truth " << want;
}

}  // namespace

TEST(LeastSquares, FitsExponentialDecay) {
  std::vector<double> t, y;
  for (int i = 0; i < 20; ++i) t.push_back(i * 0.5), y.push_back(3.0 * std::exp(-0.7 * i * 0.5) + 0.2);
  ResidualFn f = [&](const std::vector<double>& x, std::vector<double>& r) {
    r.resize(t.size());
    for (size_t i = 0; i < t.size(); ++i) r[i] = x[0] * std::exp(-x[1] * t[i]) + x[2] - y[i];
  };
  LsqResult res = levenberg_marquardt(f, {1, 0.1, 0});
  EXPECT_NEAR(res.x[0], 3.0, 1e-6);
  EXPECT_NEAR(res.x[1], 0.7, 1e-6);
  EXPECT_NEAR(res.x[2], 0.2, 1e-6);
}

TEST(Fit, RecoversKnownParametersOnGpuCluster) {
  ClusterSpec c = *cluster_preset("dgx-h100");
  c.scale_up_latency_us = 2.4;
  c.scale_out_latency_us = 7.5;
  CostParams truth = truth_params();
  std::vector<KernelRow> ks;
  std::vector<CollectiveRow> cs;
  synthesize(c, truth, ks, cs, true, 0.0);
  ClusterSpec start = *cluster_preset("dgx-h100");  // latencies 3 and 6: the fit must move them
  auto fit = fit_rows(ks, cs, start, CostParams{});
  ASSERT_TRUE(fit) << fit.error().message();
  const CostParams& p = fit->params;
  expect_close(p.hbm_eff, truth.hbm_eff, "hbm_eff");
  expect_close(p.kernel_overhead_us, truth.kernel_overhead_us, "kernel_overhead_us");
  expect_close(p.gemm_eff_max, truth.gemm_eff_max, "gemm_eff_max");
  expect_close(p.gemm_ramp_us, truth.gemm_ramp_us, "gemm_ramp_us");
  expect_close(p.eff_for(Precision::fp8), 0.77, "precision_eff.fp8");
  expect_close(p.attn_fwd_eff, truth.attn_fwd_eff, "attn_fwd_eff");
  expect_close(p.attn_bwd_eff, truth.attn_bwd_eff, "attn_bwd_eff");
  expect_close(p.nvlink_eff, truth.nvlink_eff, "nvlink_eff");
  expect_close(p.network_eff, truth.network_eff, "network_eff");
  expect_close(p.a2a_eff, truth.a2a_eff, "a2a_eff");
  expect_close(fit->cluster.scale_up_latency_us, 2.4, "scale_up_latency_us");
  expect_close(fit->cluster.scale_out_latency_us, 7.5, "scale_out_latency_us");
  for (const auto& cls : fit->classes) EXPECT_LT(cls.error.mape, 1e-3) << cls.name;
  auto j = fit->to_json();
  EXPECT_TRUE(j["classes"].contains("gemm"));
  EXPECT_EQ(j["classes"]["gemm"]["rows"], 80);
}

TEST(Fit, RecoversWithMeasurementNoise) {
  ClusterSpec c = *cluster_preset("dgx-h100");
  CostParams truth = truth_params();
  std::vector<KernelRow> ks;
  std::vector<CollectiveRow> cs;
  synthesize(c, truth, ks, cs, true, 0.03);  // +-3% uniform noise per row
  auto fit = fit_rows(ks, cs, c, CostParams{});
  ASSERT_TRUE(fit) << fit.error().message();
  expect_close(fit->params.gemm_eff_max, truth.gemm_eff_max, "gemm_eff_max", 0.02);
  expect_close(fit->params.hbm_eff, truth.hbm_eff, "hbm_eff", 0.02);
  expect_close(fit->params.attn_fwd_eff, truth.attn_fwd_eff, "attn_fwd_eff", 0.02);
  expect_close(fit->params.nvlink_eff, truth.nvlink_eff, "nvlink_eff", 0.02);
  for (const auto& cls : fit->classes) EXPECT_LT(cls.error.mape, 0.03) << cls.name;
}

TEST(Fit, RecoversKnownParametersOnCpuCluster) {
  ClusterSpec c;
  c.name = "local-cpu";
  c.gpu.name = "cpu core";
  c.gpu.peak_tflops[Precision::fp32] = 0.095;
  c.gpu.hbm_gbps = 20;
  c.gpu.memory_gib = 12;
  c.gpu.sm_count = 1;
  c.gpus_per_node = c.nvlink_domain_size = 2;
  c.scale_up_bw_gbps = c.scale_out_bw_gbps = 5;
  c.scale_up_latency_us = c.scale_out_latency_us = 0.8;
  CostParams truth = truth_params();
  truth.gemm_eff_max = 0.93;
  truth.gemm_ramp_us = 21;  // 2 MFLOP at the core's 95 GFLOP/s
  truth.kernel_overhead_us = 0.3;
  std::vector<KernelRow> ks;
  std::vector<CollectiveRow> cs;
  synthesize(c, truth, ks, cs, false, 0.0);
  ClusterSpec start = c;
  start.scale_up_latency_us = start.scale_out_latency_us = 5;
  auto fit = fit_rows(ks, cs, start, CostParams{});
  ASSERT_TRUE(fit) << fit.error().message();
  expect_close(fit->params.gemm_eff_max, 0.93, "gemm_eff_max");
  expect_close(fit->params.gemm_ramp_us, 21, "gemm_ramp_us");
  expect_close(fit->params.kernel_overhead_us, 0.3, "kernel_overhead_us");
  expect_close(fit->params.hbm_eff, truth.hbm_eff, "hbm_eff");
  expect_close(fit->params.nvlink_eff, truth.nvlink_eff, "nvlink_eff");
  expect_close(fit->cluster.scale_up_latency_us, 0.8, "scale_up_latency_us");
}

TEST(Fit, MissingClassesKeepDefaultsAndSaySo) {
  ClusterSpec c = *cluster_preset("dgx-h100");
  std::vector<KernelRow> ks;
  std::vector<CollectiveRow> cs;
  synthesize(c, truth_params(), ks, cs, true, 0.0);
  std::vector<KernelRow> only_gemm;
  for (const auto& r : ks)
    if (r.op == "fc1_gemm") only_gemm.push_back(r);
  auto fit = fit_rows(only_gemm, {}, c, CostParams{});
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->params.attn_fwd_eff, CostParams{}.attn_fwd_eff);
  EXPECT_EQ(fit->params.nvlink_eff, CostParams{}.nvlink_eff);
  bool noted = false;
  for (const auto& cls : fit->classes) noted |= cls.name == "attention" && !cls.note.empty();
  EXPECT_TRUE(noted);
  EXPECT_FALSE(fit_rows({}, {}, c, CostParams{}));
}

TEST(Fit, IdRanges) {
  EXPECT_EQ(id_ranges({5, 1, 2, 3, 8, 10, 11}), "1-3,5,8,10-11");
  EXPECT_EQ(id_ranges({}), "");
}
