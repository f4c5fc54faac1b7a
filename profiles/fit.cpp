// Calibration fit per op class in log space (see fit.h).
#include "profiles/fit.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "core/stats.h"
#include "profiles/cost_eval.h"
#include "profiles/least_squares.h"

namespace mplan::profiles {

using nlohmann::json;

namespace {

struct Model {
  CostParams p;
  ClusterSpec c;
};

// A fitted parameter: where it lives in the model and its range (efficiency in (0, 1) through a
// logistic, anything else positive through exp).
struct Param {
  std::string name;
  bool unit;
  std::function<double&(Model&)> ref;
  double floor = 0;  // positive parameters stay above this (a physical minimum)
};

double to_free(const Param& p, double v) {
  if (p.unit) {
    v = std::clamp(v, 1e-4, 1 - 1e-9);
    return std::log(v / (1 - v));
  }
  return std::log(std::max(v - p.floor, 1e-12));
}
double from_free(const Param& p, double u) { return p.unit ? 1.0 / (1.0 + std::exp(-u)) : p.floor + std::exp(u); }

double log_residual(double pred, double meas) {
  if (!(pred > 0) || !std::isfinite(pred) || !(meas > 0)) return 50.0;
  return std::log(pred / meas);
}

// Fits `params` of `m` so that predict(row) matches measured(row) over `n` rows; returns the error.
FitError fit_class(Model& m, const std::vector<Param>& params, size_t n,
                   const std::function<double(const Model&, size_t)>& predict, const std::function<double(size_t)>& measured) {
  auto apply = [&](Model& mm, const std::vector<double>& x) {
    for (size_t i = 0; i < params.size(); ++i) params[i].ref(mm) = from_free(params[i], x[i]);
  };
  ResidualFn f = [&](const std::vector<double>& x, std::vector<double>& r) {
    Model mm = m;
    apply(mm, x);
    r.resize(n);
    for (size_t i = 0; i < n; ++i) r[i] = log_residual(predict(mm, i), measured(i));
  };
  std::vector<double> x0;
  x0.reserve(params.size());
  for (const auto& p : params) x0.push_back(to_free(p, p.ref(m)));
  std::vector<std::vector<double>> starts = {x0};
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<double> alts = params[i].unit ? std::vector<double>{0.2, 0.5, 0.95} : std::vector<double>{1e-3, 1e-1, 1e1, 1e3};
    for (double a : alts) {
      auto s = x0;
      s[i] = params[i].unit ? to_free(params[i], a) : to_free(params[i], params[i].ref(m) * a);
      starts.push_back(s);
    }
  }
  for (double a : {0.3, 0.7, 0.95}) {
    auto s = x0;
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].unit) s[i] = to_free(params[i], a);
    starts.push_back(s);
  }
  if (!params.empty() && n > 0) {
    LsqResult best = least_squares_multistart(f, starts);
    apply(m, best.x);
  }
  std::vector<double> pred(n), meas(n);
  for (size_t i = 0; i < n; ++i) pred[i] = predict(m, i), meas[i] = measured(i);
  return fit_error(pred, meas);
}

std::vector<std::pair<std::string, double>> values(Model& m, const std::vector<Param>& ps) {
  std::vector<std::pair<std::string, double>> v;
  v.reserve(ps.size());
  for (const auto& p : ps) v.emplace_back(p.name, p.ref(m));
  return v;
}

Param unit_param(const std::string& name, double CostParams::*f) {
  return {name, true, [f](Model& m) -> double& { return m.p.*f; }};
}
Param pos_param(const std::string& name, double CostParams::*f, double floor) {
  return {name, false, [f](Model& m) -> double& { return m.p.*f; }, floor};
}
// Physical minimums: a kernel launch or a message step costs at least 10 ns; a GEMM's ramp (the
// fixed time of a kernel beyond its work) at least 1 ps.
constexpr double kMinOverheadUs = 0.01, kMinRampUs = 1e-6;

json error_json(const FitError& e) {
  return {{"rows", e.rows},       {"mape", e.mape},       {"median_ape", e.median_ape},
          {"p90_ape", e.p90_ape}, {"max_ape", e.max_ape}, {"rms_log_error", e.rms_log}};
}

}  // namespace

FitError fit_error(const std::vector<double>& pred, const std::vector<double>& meas) {
  FitError e;
  e.rows = int(pred.size());
  if (pred.empty()) return e;
  std::vector<double> ape;
  double sum = 0, sq = 0;
  for (size_t i = 0; i < pred.size(); ++i) {
    double a = std::abs(pred[i] - meas[i]) / meas[i];
    ape.push_back(a);
    sum += a;
    double l = log_residual(pred[i], meas[i]);
    sq += l * l;
  }
  stats::Summary s = stats::summarize(ape);
  e.mape = sum / double(ape.size());
  e.median_ape = s.median;
  e.p90_ape = s.p90;
  e.max_ape = *std::max_element(ape.begin(), ape.end());
  e.rms_log = std::sqrt(sq / double(pred.size()));
  return e;
}

std::string id_ranges(std::vector<int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

Expected<FitResult> fit_rows(const std::vector<KernelRow>& kernels, const std::vector<CollectiveRow>& collectives,
                             const ClusterSpec& cluster, const CostParams& base, const FitOptions& opt) {
  if (kernels.empty() && collectives.empty())
    return Error("no kernel or collective rows to fit; run `mplan profile` into this --db first");
  if (cluster.gpu.peak_tflops.empty() || cluster.gpu.hbm_gbps <= 0)
    return Error("the device has no peak or memory bandwidth; its profile is incomplete");
  Model m{base, cluster};
  FitResult out;

  std::map<std::string, std::vector<const KernelRow*>> by_class;
  for (const auto& r : kernels) {
    if (r.median_us <= 0) continue;
    by_class[fit_class_of(r)].push_back(&r);
    out.kernel_ids.push_back(r.id);
  }
  auto kernel_fit = [&](const std::string& cls, const std::vector<Param>& ps, const std::string& empty_note,
                        const std::string& kept_note = "") {
    ClassFit cf;
    cf.name = cls;
    if (!kept_note.empty()) cf.note = kept_note;
    const auto& rows = by_class[cls];
    if (rows.empty()) {
      cf.note = empty_note;
      out.classes.push_back(cf);
      return;
    }
    cf.error = fit_class(
        m, ps, rows.size(), [&](const Model& mm, size_t i) { return predict_kernel_s(*rows[i], mm.c, mm.p); },
        [&](size_t i) { return rows[i]->median_us * 1e-6; });
    cf.params = values(m, ps);
    out.classes.push_back(cf);
  };

  // A parameter is fitted only when the rows can tell it apart: a fixed cost needs sizes spanning a
  // wide range (small ones included), a half-saturation size needs GEMMs of very different sizes.
  auto span = [](const std::vector<double>& v) {
    if (v.empty()) return 1.0;
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return *lo > 0 ? *hi / *lo : 1.0;
  };
  std::vector<double> mem_bytes, gemm_work;
  for (const auto* r : by_class["memory"]) mem_bytes.push_back(r->bytes);
  for (const auto* r : by_class["gemm"]) gemm_work.push_back(2.0 * double(r->m) * double(r->n) * double(r->k));
  const bool have_memory = !by_class["memory"].empty();
  const bool memory_spans = mem_bytes.size() >= 3 && span(mem_bytes) >= 30;
  const bool gemm_spans = gemm_work.size() >= 4 && span(gemm_work) >= 30;
  {
    std::vector<Param> ps = {unit_param("hbm_eff", &CostParams::hbm_eff)};
    if (memory_spans) ps.push_back(pos_param("kernel_overhead_us", &CostParams::kernel_overhead_us, kMinOverheadUs));
    kernel_fit("memory", ps, "no memory-bound rows: hbm_eff and kernel_overhead_us keep their defaults",
               memory_spans ? "" : "kernel_overhead_us kept: the sizes span too narrow a range to separate it");
  }

  // GEMM: the reference precision (bf16 when measured, else the most common dtype) keeps
  // precision_eff 1; every other measured precision gets its own multiplier.
  {
    std::map<std::string, int> dtypes;
    for (const auto* r : by_class["gemm"]) dtypes[r->dtype]++;
    std::string ref = dtypes.count("bf16") ? "bf16" : "";
    for (const auto& [d, n] : dtypes)
      if (ref.empty() || (ref != "bf16" && n > dtypes[ref])) ref = d;
    std::vector<Param> ps = {unit_param("gemm_eff_max", &CostParams::gemm_eff_max)};
    if (gemm_spans) ps.push_back(pos_param("gemm_ramp_us", &CostParams::gemm_ramp_us, kMinRampUs));
    if (!have_memory && gemm_spans)
      ps.push_back(pos_param("kernel_overhead_us", &CostParams::kernel_overhead_us, kMinOverheadUs));
    for (const auto& [d, n] : dtypes) {
      auto prec = parse_precision(d);
      if (!prec) continue;
      if (d == ref) {
        m.p.precision_eff[*prec] = 1.0;
        continue;
      }
      Precision pr = *prec;
      ps.push_back({"precision_eff." + d, false,
                    [pr](Model& mm) -> double& {
                      if (!mm.p.precision_eff.count(pr)) mm.p.precision_eff[pr] = 1.0;
                      return mm.p.precision_eff[pr];
                    },
                    0.0});
    }
    kernel_fit("gemm", ps, "no GEMM rows: GEMM parameters keep their defaults",
               gemm_spans ? "" : "gemm_ramp_us (and kernel_overhead_us) kept: too few GEMM sizes to separate them");
  }

  {
    std::vector<Param> ps;
    bool fwd = false, bwd = false;
    for (const auto* r : by_class["attention"]) (r->pass == "fwd" ? fwd : bwd) = true;
    if (fwd) ps.push_back(unit_param("attn_fwd_eff", &CostParams::attn_fwd_eff));
    if (bwd) ps.push_back(unit_param("attn_bwd_eff", &CostParams::attn_bwd_eff));
    kernel_fit("attention", ps, "no attention rows: attn_fwd_eff and attn_bwd_eff keep their defaults");
  }

  // Collectives.
  std::vector<const CollectiveRow*> up, out_rows, a2a;
  for (const auto& r : collectives) {
    if (r.median_us <= 0 || !parse_collective(r.op)) continue;
    out.collective_ids.push_back(r.id);
    if (r.op == "all_to_all")
      a2a.push_back(&r);
    else
      (r.domains > 1 ? out_rows : up).push_back(&r);
  }
  auto coll_fit = [&](const std::string& cls, const std::vector<const CollectiveRow*>& rows, std::vector<Param> ps,
                      const std::string& empty_note) {
    ClassFit cf;
    cf.name = cls;
    // a latency needs messages small enough for it to show (and more than one size)
    int64_t smallest = INT64_MAX;
    for (const auto* r : rows) smallest = std::min(smallest, r->bytes);
    if (ps.size() > 1 && (rows.size() < 3 || smallest > (int64_t(1) << 20))) {
      ps.resize(1);
      cf.note = "latency kept: no messages of 1 MiB or less";
    }
    if (rows.empty()) {
      cf.note = empty_note;
      out.classes.push_back(cf);
      return;
    }
    cf.error = fit_class(
        m, ps, rows.size(), [&](const Model& mm, size_t i) { return predict_collective_s(*rows[i], mm.c, mm.p); },
        [&](size_t i) { return rows[i]->median_us * 1e-6; });
    cf.params = values(m, ps);
    out.classes.push_back(cf);
  };
  Param up_lat{"scale_up_latency_us", false, [](Model& mm) -> double& { return mm.c.scale_up_latency_us; }, kMinOverheadUs};
  Param out_lat{"scale_out_latency_us", false, [](Model& mm) -> double& { return mm.c.scale_out_latency_us; }, kMinOverheadUs};
  if (m.c.scale_up_latency_us <= 0) m.c.scale_up_latency_us = 1.0;
  if (m.c.scale_out_latency_us <= 0) m.c.scale_out_latency_us = 1.0;
  std::vector<Param> ps_up = {unit_param("nvlink_eff", &CostParams::nvlink_eff)};
  std::vector<Param> ps_out = {unit_param("network_eff", &CostParams::network_eff)};
  if (opt.fit_latency) ps_up.push_back(up_lat), ps_out.push_back(out_lat);
  coll_fit("collectives.scale_up", up, ps_up, "no single-domain collective rows: nvlink_eff keeps its default");
  coll_fit("collectives.scale_out", out_rows, ps_out, "no multi-domain collective rows: network_eff keeps its default");
  coll_fit("collectives.all_to_all", a2a, {unit_param("a2a_eff", &CostParams::a2a_eff)},
           "no all-to-all rows: a2a_eff keeps its default");

  // Errors per op (kernels: op/pass; collectives: op) with the final parameters.
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> per;
  for (const auto& r : kernels)
    if (r.median_us > 0) {
      auto& pm = per[r.op + " " + r.pass];
      pm.first.push_back(predict_kernel_s(r, m.c, m.p));
      pm.second.push_back(r.median_us * 1e-6);
    }
  for (const auto& r : collectives)
    if (r.median_us > 0 && parse_collective(r.op)) {
      auto& pm = per[r.op + (r.domains > 1 ? " (multi-domain)" : "")];
      pm.first.push_back(predict_collective_s(r, m.c, m.p));
      pm.second.push_back(r.median_us * 1e-6);
    }
  for (auto& [k, v] : per) out.per_op.emplace_back(k, fit_error(v.first, v.second));

  out.params = m.p;
  out.cluster = m.c;
  return out;
}

json FitResult::to_json() const {
  json classes_j = json::object();
  for (const auto& c : classes) {
    json p = json::object();
    for (const auto& [k, v] : c.params) p[k] = v;
    json cj = error_json(c.error);
    cj["fitted"] = p;
    if (!c.note.empty()) cj["note"] = c.note;
    classes_j[c.name] = cj;
  }
  json ops = json::object();
  for (const auto& [k, e] : per_op) ops[k] = error_json(e);
  return {{"classes", classes_j},
          {"ops", ops},
          {"latency_us", {{"scale_up", cluster.scale_up_latency_us}, {"scale_out", cluster.scale_out_latency_us}}},
          {"rows_used", {{"kernels", id_ranges(kernel_ids)}, {"collectives", id_ranges(collective_ids)}}},
          {"space", "least squares on ln(predicted / measured time), per op class"}};
}

}  // namespace mplan::profiles
