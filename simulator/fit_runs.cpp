// Global-parameter fit against measured runs with NLopt (see fit_runs.h).
#include "simulator/fit_runs.h"

#include <algorithm>
#include <cmath>
#include <nlopt.hpp>
#include <stdexcept>
#include <thread>

#include "core/ops.h"
#include "core/parallel_for.h"
#include "simulator/cost_param_table.h"
#include "simulator/simulator.h"

namespace mplan {

double* calibration_param(Calibration& c, const std::string& name) {
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

std::vector<FitParamSpec> default_fit_params() {
  // The bounds are the cost-parameter table's (simulator/cost_params.cpp); per-architecture overrides
  // first, then the global parameters, each in table order. The attention kernels' efficiencies are
  // measured constants of the calibration (kernel benchmarks: FlashAttention-2 on A100, cuDNN on H100
  // and B200; docs/cost_model.md), not fitted: the published runs cannot tell the forward from the
  // backward apart. Blackwell's backward has no published kernel measurement, so it is fitted, with
  // its forward fixed.
  std::vector<FitParamSpec> v;
  for (bool per_arch : {true, false})
    for (const CostParamRow& r : cost_param_table()) {
      if (!r.fit.fitted() || per_arch != (*r.fit.archs != '\0')) continue;
      if (!per_arch) v.push_back({r.name, r.fit.lo, r.fit.hi, r.doc});
      for (const std::string& arch : per_arch ? split_list(r.fit.archs) : std::vector<std::string>{})
        v.push_back({arch + "/" + r.name, r.fit.lo, r.fit.hi, r.doc});
    }
  return v;
}

FitParamSpec fit_param(const std::string& name) {
  for (const FitParamSpec& s : default_fit_params())
    if (s.name == name) return s;
  throw std::logic_error("fit_param: '" + name + "' is not a fitted parameter of the cost-parameter table");
}

FitLoss fit_loss(const std::vector<MeasuredRun>& runs, const Calibration& cal, int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<double> ratio(runs.size(), 0.0);
  std::vector<std::string> why(runs.size());
  parallel_for(runs.size(), threads, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      auto rep = simulate(runs[i].plan, cal.params_for(runs[i].plan.cluster.gpu));
      if (!rep)
        why[i] = rep.error().problems.empty() ? "does not simulate" : rep.error().problems.front();
      else if (!(rep->tokens_per_s_per_gpu > 0) || !std::isfinite(rep->tokens_per_s_per_gpu))
        why[i] = "no throughput";
      else
        ratio[i] = rep->tokens_per_s_per_gpu / runs[i].tokens_per_s_per_gpu;
    }
  });
  FitLoss f;
  double sl = 0, sa = 0, wsum = 0;
  int ok = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const double w = runs[i].weight;
    wsum += w;
    ++f.rows;
    if (!why[i].empty()) {
      ++f.failures;
      f.failed.push_back(runs[i].id + ": " + why[i]);
      sl += w * kFailedRowPenalty;
      continue;
    }
    sl += w * std::fabs(std::log(ratio[i]));
    sa += std::fabs(ratio[i] - 1.0) * 100.0;
    ++ok;
  }
  f.loss = wsum > 0 ? sl / wsum : 1e9;
  f.mape = ok > 0 ? sa / ok : 1e9;
  return f;
}

namespace {

// Coordinates in [0, 1] per parameter, log-scaled where the lower bound is positive.
struct Scale {
  const FitParamSpec& s;
  bool log() const { return s.lo > 0; }
  double to_unit(double v) const {
    v = std::clamp(v, s.lo, s.hi);
    return log() ? std::log(v / s.lo) / std::log(s.hi / s.lo) : (v - s.lo) / (s.hi - s.lo);
  }
  double from_unit(double u) const {
    u = std::clamp(u, 0.0, 1.0);
    double v = log() ? s.lo * std::exp(u * std::log(s.hi / s.lo)) : s.lo + u * (s.hi - s.lo);
    return std::clamp(v, s.lo, s.hi);
  }
};

}  // namespace

bool has_unmeasured_kernel(const Plan& plan) {
  const ModelSpec& m = plan.model;
  for (int i = 0; i < m.num_layers; ++i) {
    if (m.layer_kind(i) == LayerKind::transformer) continue;  // (attention and MLPs have measured rates)
    for (const Op& o : layer_ops(m, i, OpContext{}))
      if (o.kind == OpKind::scan) return true;
  }
  return false;
}

std::vector<MeasuredRun> fitted_runs(const std::vector<MeasuredRun>& runs) {
  std::vector<MeasuredRun> out;
  for (const MeasuredRun& r : runs)
    if (!has_unmeasured_kernel(r.plan)) out.push_back(r);
  return out;
}

FitResult fit_cost_params(const std::vector<MeasuredRun>& all_runs, const Calibration& start,
                          const std::vector<FitParamSpec>& which, int rounds,
                          const std::function<void(int, int, double)>& progress, int max_evals, int threads) {
  const std::vector<MeasuredRun> runs = fitted_runs(all_runs);
  FitResult fr;
  fr.calibration = start;
  fr.rows = int(runs.size());
  fr.rows_not_fitted = int(all_runs.size() - runs.size());
  std::vector<Scale> scales;
  std::vector<double> x;
  for (const auto& spec : which) {
    double* ref = calibration_param(fr.calibration, spec.name);
    if (!ref) throw std::invalid_argument("unknown cost parameter " + spec.name);
    // every parameter starts inside its physical bounds ("before" is measured on the clamped start)
    *ref = std::clamp(*ref, spec.lo, spec.hi);
    scales.push_back({spec});
    x.push_back(scales.back().to_unit(*ref));
  }
  FitLoss before = fit_loss(runs, fr.calibration, threads);
  fr.loss_before = before.loss;
  fr.mape_before = before.mape;
  auto apply = [&](Calibration& c, const std::vector<double>& u) {
    for (size_t i = 0; i < which.size(); ++i) *calibration_param(c, which[i].name) = scales[i].from_unit(u[i]);
  };
  double best = before.loss;
  std::vector<double> best_x = x;
  if (!which.empty()) {
    const int evals_per_round = max_evals > 0 ? max_evals : 60 * int(which.size());
    for (int round = 0; round < std::max(1, rounds); ++round) {
      nlopt::opt opt(nlopt::LN_SBPLX, unsigned(which.size()));
      opt.set_lower_bounds(std::vector<double>(which.size(), 0.0));
      opt.set_upper_bounds(std::vector<double>(which.size(), 1.0));
      opt.set_initial_step(0.25 / std::pow(2.0, round));
      opt.set_maxeval(evals_per_round);
      opt.set_xtol_rel(1e-4);
      opt.set_ftol_abs(1e-6);
      struct Ctx {
        const std::vector<MeasuredRun>* runs;
        Calibration cal;
        std::function<void(Calibration&, const std::vector<double>&)> apply;
        int threads, evals = 0;
      } ctx{&runs, fr.calibration, apply, threads};
      opt.set_min_objective(
          [](const std::vector<double>& u, std::vector<double>&, void* data) {
            auto* c = static_cast<Ctx*>(data);
            c->apply(c->cal, u);
            ++c->evals;
            return fit_loss(*c->runs, c->cal, c->threads).loss;
          },
          &ctx);
      std::vector<double> u = best_x;
      double f = best;
      try {
        opt.optimize(u, f);
      } catch (const nlopt::roundoff_limited&) {
        // the last point is still a valid result
      } catch (const std::runtime_error&) {
      }
      fr.evaluations += ctx.evals;
      if (f < best) {
        best = f;
        best_x = u;
      }
      if (progress) progress(round, fr.evaluations, best);
    }
  }
  apply(fr.calibration, best_x);
  FitLoss after = fit_loss(runs, fr.calibration, threads);
  fr.loss_after = after.loss;
  fr.mape_after = after.mape;
  fr.failed = after.failed;
  return fr;
}

}  // namespace mplan
