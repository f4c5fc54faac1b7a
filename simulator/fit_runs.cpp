// Global-parameter fit against measured runs (see fit_runs.h).
#include "simulator/fit_runs.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "simulator/simulator.h"

namespace mplan {

double* cost_param_ref(CostParams& p, const std::string& n) {
  if (n == "gemm_eff_max") return &p.gemm_eff_max;
  if (n == "gemm_half_flops") return &p.gemm_half_flops;
  if (n == "attn_fwd_eff") return &p.attn_fwd_eff;
  if (n == "attn_bwd_eff") return &p.attn_bwd_eff;
  if (n == "hbm_eff") return &p.hbm_eff;
  if (n == "kernel_overhead_us") return &p.kernel_overhead_us;
  if (n == "nvlink_eff") return &p.nvlink_eff;
  if (n == "network_eff") return &p.network_eff;
  if (n == "a2a_eff") return &p.a2a_eff;
  if (n == "overlap_slowdown") return &p.overlap_slowdown;
  if (n == "optimizer_overhead_s") return &p.optimizer_overhead_s;
  if (n.rfind("precision_eff.", 0) == 0) {
    auto prec = parse_precision(n.substr(14));
    if (!prec) return nullptr;
    if (!p.precision_eff.count(*prec)) p.precision_eff[*prec] = 1.0;
    return &p.precision_eff[*prec];
  }
  return nullptr;
}

std::vector<FitParamSpec> default_fit_params() {
  return {{"gemm_eff_max", 0.4, 1.0},      {"gemm_half_flops", 1e7, 1e11},     {"attn_fwd_eff", 0.2, 1.0},
          {"attn_bwd_eff", 0.15, 1.0},     {"hbm_eff", 0.3, 1.0},              {"kernel_overhead_us", 0.5, 40},
          {"nvlink_eff", 0.3, 1.0},        {"network_eff", 0.3, 1.0},          {"a2a_eff", 0.1, 1.0},
          {"overlap_slowdown", 0.0, 0.5},  {"precision_eff.fp8", 0.3, 1.0},    {"precision_eff.mxfp8", 0.3, 1.0},
          {"precision_eff.nvfp4", 0.2, 1.0}, {"optimizer_overhead_s", 0.0, 0.5}};
}

std::pair<double, double> fit_loss(const std::vector<MeasuredRun>& runs, const CostParams& params) {
  double sl = 0, sa = 0;
  int n = 0;
  for (const auto& r : runs) {
    auto rep = simulate(r.plan, params);
    if (!rep || rep->tokens_per_s_per_gpu <= 0) continue;
    double ratio = rep->tokens_per_s_per_gpu / r.tokens_per_s_per_gpu;
    sl += std::fabs(std::log(ratio));
    sa += std::fabs(ratio - 1.0) * 100.0;
    ++n;
  }
  if (n == 0) return {1e9, 1e9};
  return {sl / n, sa / n};
}

FitResult fit_cost_params(const std::vector<MeasuredRun>& runs, const CostParams& start,
                          const std::vector<FitParamSpec>& which, int passes,
                          const std::function<void(int, const std::string&, double)>& progress) {
  FitResult fr;
  fr.params = start;
  fr.rows = int(runs.size());
  auto [l0, m0] = fit_loss(runs, start);
  fr.loss_before = l0;
  fr.mape_before = m0;
  double best = l0;
  const double phi = (std::sqrt(5.0) - 1) / 2;
  for (int pass = 0; pass < passes; ++pass) {
    for (const auto& spec : which) {
      CostParams trial = fr.params;
      double* ref = cost_param_ref(trial, spec.name);
      if (!ref) throw std::invalid_argument("unknown cost parameter " + spec.name);
      // golden-section search in log space (parameters span decades), narrowing each pass
      bool log_space = spec.lo > 0;
      auto to_x = [&](double v) { return log_space ? std::log(v) : v; };
      auto from_x = [&](double x) { return log_space ? std::exp(x) : x; };
      double cur = std::clamp(*ref, spec.lo, spec.hi);
      double width = (to_x(spec.hi) - to_x(spec.lo)) / std::pow(2.0, pass);
      double a = std::max(to_x(spec.lo), to_x(cur) - width / 2), b = std::min(to_x(spec.hi), to_x(cur) + width / 2);
      auto eval = [&](double x) {
        *ref = from_x(x);
        ++fr.evaluations;
        return fit_loss(runs, trial).first;
      };
      double c = b - phi * (b - a), d = a + phi * (b - a);
      double fc = eval(c), fd = eval(d);
      for (int it = 0; it < 14; ++it) {
        if (fc < fd) {
          b = d, d = c, fd = fc;
          c = b - phi * (b - a);
          fc = eval(c);
        } else {
          a = c, c = d, fc = fd;
          d = a + phi * (b - a);
          fd = eval(d);
        }
      }
      double xbest = fc < fd ? c : d, fbest = std::min(fc, fd);
      if (fbest < best) {
        best = fbest;
        *cost_param_ref(fr.params, spec.name) = from_x(xbest);
      }
      if (progress) progress(pass, spec.name, best);
    }
  }
  auto [l1, m1] = fit_loss(runs, fr.params);
  fr.loss_after = l1;
  fr.mape_after = m1;
  return fr;
}

}  // namespace mplan
