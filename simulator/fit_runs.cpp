// Global-parameter fit against measured runs (see fit_runs.h).
#include "simulator/fit_runs.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "simulator/simulator.h"

namespace mplan {

namespace {
// The value a fit parameter name refers to inside a calibration ("<arch>/<field>" = override).
double* calibration_ref(Calibration& c, const std::string& name) {
  auto slash = name.find('/');
  if (slash == std::string::npos) return cost_param_ref(c.params, name);
  std::string arch = name.substr(0, slash), field = name.substr(slash + 1);
  CostParams probe = c.params;
  double* global = cost_param_ref(probe, field);
  if (!global) return nullptr;
  auto& m = c.by_arch[arch];
  if (!m.count(field)) m[field] = *global;
  return &m[field];
}
}  // namespace

std::vector<FitParamSpec> default_fit_params() {
  std::vector<FitParamSpec> v;
  for (const char* arch : {"ampere", "hopper", "blackwell"}) {
    v.push_back({std::string(arch) + "/gemm_eff_max", 0.4, 1.0});
    v.push_back({std::string(arch) + "/attn_fwd_eff", 0.2, 0.85});
    v.push_back({std::string(arch) + "/attn_bwd_eff", 0.15, 0.85});
  }
  std::vector<FitParamSpec> global = {
          {"gemm_half_flops", 1e7, 1e11},  {"grouped_gemm_eff", 0.3, 1.0}, {"triton_attn_eff", 0.2, 1.0},  {"hbm_eff", 0.3, 1.0},              {"kernel_overhead_us", 0.5, 40},
          {"nvlink_eff", 0.3, 1.0},        {"network_eff", 0.3, 1.0},          {"a2a_eff", 0.1, 1.0}, {"moe_load_cv", 0.0, 2.0},
          {"overlap_slowdown", 0.0, 0.5},  {"precision_eff.fp8", 0.3, 1.0},    {"precision_eff.mxfp8", 0.3, 1.0},
          {"precision_eff.nvfp4", 0.2, 1.0}, {"optimizer_overhead_s", 0.0, 0.5}};
  v.insert(v.end(), global.begin(), global.end());
  return v;
}

std::pair<double, double> fit_loss(const std::vector<MeasuredRun>& runs, const Calibration& cal) {
  double sl = 0, sa = 0, wsum = 0;
  int n = 0;
  for (const auto& r : runs) {
    auto rep = simulate(r.plan, cal.params_for(r.plan.cluster.gpu));
    if (!rep || rep->tokens_per_s_per_gpu <= 0) continue;
    double ratio = rep->tokens_per_s_per_gpu / r.tokens_per_s_per_gpu;
    sl += r.weight * std::fabs(std::log(ratio));
    wsum += r.weight;
    sa += std::fabs(ratio - 1.0) * 100.0;
    ++n;
  }
  if (n == 0 || wsum <= 0) return {1e9, 1e9};
  return {sl / wsum, sa / n};
}

FitResult fit_cost_params(const std::vector<MeasuredRun>& runs, const Calibration& start,
                          const std::vector<FitParamSpec>& which, int passes,
                          const std::function<void(int, const std::string&, double)>& progress) {
  FitResult fr;
  fr.calibration = start;
  fr.rows = int(runs.size());
  // every fitted parameter starts inside its physical bounds (a value outside them, e.g. from an
  // older calibration, is never kept just because nothing inside did better)
  for (const auto& spec : which)
    if (double* ref = calibration_ref(fr.calibration, spec.name)) *ref = std::clamp(*ref, spec.lo, spec.hi);
  auto [l0, m0] = fit_loss(runs, fr.calibration);
  fr.loss_before = l0;
  fr.mape_before = m0;
  double best = l0;
  const double phi = (std::sqrt(5.0) - 1) / 2;
  for (int pass = 0; pass < passes; ++pass) {
    for (const auto& spec : which) {
      Calibration trial = fr.calibration;
      double* ref = calibration_ref(trial, spec.name);
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
        *calibration_ref(fr.calibration, spec.name) = from_x(xbest);
      }
      if (progress) progress(pass, spec.name, best);
    }
  }
  auto [l1, m1] = fit_loss(runs, fr.calibration);
  fr.loss_after = l1;
  fr.mape_after = m1;
  return fr;
}

}  // namespace mplan
