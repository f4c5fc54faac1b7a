// Cost-model parameters: defaults and the mplan.calibration/1 JSON form.
#include "simulator/cost_params.h"

#include "simulator/cost_param_table.h"

#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/activation_options.h"
#include "core/json_fields.h"
#include "core/presets.h"

namespace mplan {

using nlohmann::json;

// Generated from simulator/default_calibration.json (see simulator/CMakeLists.txt).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_calibration();

namespace {
CostParams physical_start() {
  CostParams p;
  // FP8 GEMMs reach a lower fraction of their (2x) peak than BF16 (casts, scaling, smaller tiles).
  p.precision_eff[Precision::fp8] = 0.80;
  p.precision_eff[Precision::mxfp8] = 0.80;
  p.precision_eff[Precision::nvfp4] = 0.65;
  p.precision_eff[Precision::fp32] = 1.0;
  return p;
}
}  // namespace

const Calibration& shipped_calibration() {
  static const Calibration cal = [] {
    const auto& files = embedded_calibration();
    if (files.empty()) return Calibration{"", "", physical_start(), {}, {}};
    auto j = nlohmann::json::parse(files.front().second, nullptr, false);
    auto c = calibration_from_json(j, physical_start());
    if (!c) throw std::logic_error("shipped calibration is invalid: " + c.error().message());
    return c.value();
  }();
  return cal;
}

CostParams default_cost_params(const ClusterSpec& c) { return shipped_calibration().params_for(c.gpu); }

const std::vector<CostParamRow>& cost_param_table() {
  using P = CostParams;
  const ParamRange eff{0, 1, true};  // efficiencies are fractions of a peak: (0, 1]
  const FitBounds fraction{0.3, 1.0}, per_arch{0.4, 1.0, "ampere,hopper,blackwell"};
  // clang-format off
  static const std::vector<CostParamRow> rows = {
      {"gemm_eff_max", &P::gemm_eff_max, eff, true, "largest GEMMs' fraction of the dense peak", per_arch},
      {"gemm_ramp_us", &P::gemm_ramp_us, {0, 1e6, false}, true, "fixed time of one GEMM kernel beyond its work at the full rate (efficiency is half its maximum where that work takes this long), microseconds", {0.01, 100}},
      {"grouped_gemm_eff", &P::grouped_gemm_eff, eff, true, "grouped expert GEMMs relative to plain GEMMs", fraction},
      {"attn_fwd_eff", &P::attn_fwd_eff, eff, true, "flash attention forward, fraction of the dense peak"},
      {"attn_bwd_eff", &P::attn_bwd_eff, eff, true, "flash attention backward, fraction of the dense peak", {0.15, 0.85, "blackwell"}},
      {"attn_fa2_fwd_eff", &P::attn_fa2_fwd_eff, eff, false, "FlashAttention-2 forward, fraction of the dense peak (per architecture; 0 = the fused rate)"},
      {"attn_fa2_bwd_eff", &P::attn_fa2_bwd_eff, eff, false, "FlashAttention-2 backward, fraction of the dense peak (per architecture; 0 = the fused rate)"},
      {"triton_attn_eff", &P::triton_attn_eff, eff, true, "the 2022 Triton flash-attention kernel relative to fused flash attention", {0.2, 1.0}},
      {"hbm_eff", &P::hbm_eff, eff, true, "memory-bound kernels' fraction of HBM bandwidth", fraction},
      // measured (anchored at H100, checked against GB200/H200 kernel ratios), not fitted: hybrid rows are not fitted
      {"ssm_kernel_sm_gbps", &P::ssm_kernel_sm_gbps, {0, 1e6, false}, true, "most GB/s per SM of mamba_ssm's Triton kernels (SSD scan, gated RMSNorm); 0 = no cap"},
      // measured (Hazy Research 2025, H100), not fitted to the published runs; `mplan calibrate` fits it to a machine's CUPTI rows
      {"kernel_overhead_us", &P::kernel_overhead_us, {0, 1e6, false}, true, "GPU idle time per kernel launched on a stream, microseconds"},
      {"kernel_overhead_graph_us", &P::kernel_overhead_graph_us, {0, 1e6, false}, true, "GPU idle time per kernel inside a CUDA graph (cuda_graph_impl), microseconds"},
      {"nvlink_eff", &P::nvlink_eff, eff, true, "achieved NVLink bus bandwidth fraction", fraction},
      {"network_eff", &P::network_eff, eff, true, "achieved scale-out bus bandwidth fraction", fraction},
      {"a2a_eff", &P::a2a_eff, eff, true, "all-to-all relative to the other collectives", {0.1, 1.0}},
      {"moe_expert_cv", &P::moe_expert_cv, {0, 100, false}, true, "coefficient of variation of tokens per expert under learned routing"},
      {"overlap_slowdown", &P::overlap_slowdown, {0, 1, false}, true, "compute slowdown beside an overlapped collective", {0.0, 0.5}},
      {"comm_overlap", &P::comm_overlap, {0, 1, false}, true, "1: communication on its own stream beside compute; 0: every collective blocks"},
      {"precision_eff.fp8", nullptr, eff, false, "FP8 GEMM efficiency relative to BF16's", fraction},
      {"precision_eff.mxfp8", nullptr, eff, false, "MXFP8 GEMM efficiency relative to BF16's", fraction},
      {"precision_eff.nvfp4", nullptr, eff, false, "NVFP4 GEMM efficiency relative to BF16's", {0.2, 1.0}},
      {"optimizer_overhead_s", &P::optimizer_overhead_s, {0, 1e4, false}, true, "per-step host cost of the user's own runs (mplan calibrate --runs), seconds; 0 in the shipped fit"},
      {"step_host_sync_s", &P::step_host_sync_s, {0, 1e4, false}, true, "per-step host time of the training loops whose data/frameworks file says \"fitted\" (no published measurement), seconds", {0.0, 0.5}},
      // frameworks with at least ten development rows (MaxText has nine: it keeps 1); torchtitan's is
      // not fitted: its measured one-GPU steps need none (docs/cost_model.md)
      {"framework_eff.llm-foundry", nullptr, eff, false, "llm-foundry's kernels (Composer FSDP) relative to Megatron-Core's", fraction},
      {"allocator_overhead_frac", &P::allocator_overhead_frac, {0, 10, false}, true, "caching-allocator slack as a fraction of the allocated peak"},
      {"reserved_gib", &P::reserved_gib, {0, 1e4, false}, true, "process memory outside the tensor allocator (CUDA context), GiB"},
      {"comm_buffer_bytes", &P::comm_buffer_bytes, {0, 1e13, false}, true, "NCCL buffers per communicator, bytes"},
  };
  // clang-format on
  return rows;
}

namespace {
const CostParamRow* cost_param_row(const std::string& name) {
  for (const CostParamRow& r : cost_param_table())
    if (name == r.name) return &r;
  return nullptr;
}
}  // namespace

double* cost_param_ref(CostParams& p, const std::string& n) {
  if (const CostParamRow* r = cost_param_row(n); r && r->member) return &(p.*r->member);
  if (n.rfind("framework_eff.", 0) == 0) {
    auto fw = parse_framework(n.substr(14));
    if (!fw) return nullptr;
    if (!p.framework_eff.count(*fw)) p.framework_eff[*fw] = 1.0;
    return &p.framework_eff[*fw];
  }
  if (n.rfind("precision_eff.", 0) == 0) {
    auto prec = parse_precision(n.substr(14));
    if (!prec) return nullptr;
    if (!p.precision_eff.count(*prec)) p.precision_eff[*prec] = 1.0;
    return &p.precision_eff[*prec];
  }
  return nullptr;
}

std::optional<std::pair<double, double>> interval_bounds(const nlohmann::json& q) {
  if (!q.is_object()) return std::nullopt;
  // "lo"/"hi" (current); "q10"/"q90" (files written before the conformal level)
  const char* lo = q.contains("lo") ? "lo" : "q10";
  const char* hi = q.contains("hi") ? "hi" : "q90";
  if (!q.contains(lo) || !q.contains(hi) || !q[lo].is_number() || !q[hi].is_number()) return std::nullopt;
  double a = q[lo].get<double>(), b = q[hi].get<double>();
  if (!std::isfinite(a) || !std::isfinite(b) || a > b) return std::nullopt;
  return std::make_pair(a, b);
}

CostParams Calibration::params_for(const GpuSpec& g) const {
  CostParams p = params;
  for (auto it = intervals.begin(); it != intervals.end(); ++it)
    if (auto b = interval_bounds(it.value())) p.interval_lo_hi[it.key()] = *b;
  auto it = by_arch.find(g.arch);
  if (it != by_arch.end())
    for (const auto& [name, v] : it->second)
      if (double* ref = cost_param_ref(p, name)) *ref = v;
  return p;
}

ParamRange cost_param_range(const std::string& name) {
  const CostParamRow* r = cost_param_row(name);
  return r ? r->range : ParamRange{0, 1, true};  // precision_eff.x: a fraction of bf16's
}

namespace {
// A cost parameter read within its physical range (cost_param_range), or nullopt with the field named.
std::optional<double> bounded(JsonFields& f, const char* key, const std::string& range_of = "") {
  if (!f.has(key)) return std::nullopt;
  ParamRange r = cost_param_range(range_of.empty() ? key : range_of);
  auto v = f.opt_number(key, true, r.hi);
  if (!v) return std::nullopt;
  if (*v > r.hi || (r.lo_open ? *v <= r.lo : *v < r.lo)) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "must be in %s%g, %g], got %g", r.lo_open ? "(" : "[", r.lo, r.hi, *v);
    f.problem(key, buf);
    return std::nullopt;
  }
  return v;
}
}  // namespace

json calibration_to_json(const Calibration& c) {
  json p = json::object();
  for (const CostParamRow& r : cost_param_table())
    if (r.global) p[r.name] = c.params.*r.member;
  p["gemm_tile_m"] = c.params.gemm_tile_m;
  p["gemm_tile_n"] = c.params.gemm_tile_n;
  json pe = json::object();
  for (auto& [k, v] : c.params.precision_eff) pe[std::string(to_string(k))] = v;
  p["precision_eff"] = pe;
  json fe = json::object();
  for (auto& [k, v] : c.params.framework_eff) fe[to_string(k)] = v;
  if (!fe.empty()) p["framework_eff"] = fe;
  json arch = json::object();
  for (const auto& [a, m] : c.by_arch) arch[a] = m;
  json out = {{"schema", kCalibrationSchema},
              {"gpu", c.gpu},
              {"arch", c.arch},
              {"params", p},
              {"by_arch", arch},
              {"fit", c.fit.is_object() ? c.fit : json::object()}};
  if (!c.intervals.empty()) out["intervals"] = c.intervals;
  return out;
}

Expected<Calibration> calibration_from_json(const json& j, const CostParams& base) {
  std::vector<std::string> problems;
  JsonFields f(j, "calibration", problems);
  if (!problems.empty()) return Error(problems);
  f.reject_unknown({"schema", "gpu", "arch", "params", "by_arch", "fit", "intervals"});
  auto schema = f.opt_string("schema");
  if (!schema || *schema != kCalibrationSchema) f.problem("schema", std::string("expected \"") + kCalibrationSchema + "\"");
  Calibration c;
  c.params = base;
  c.gpu = f.opt_string("gpu").value_or("");
  c.arch = f.opt_string("arch").value_or("");
  if (const json* pj = f.object("params")) {
    JsonFields pf(*pj, "calibration.params", problems);
    std::vector<std::string> known = {"gemm_tile_m", "gemm_tile_n", "precision_eff", "framework_eff"};
    for (const CostParamRow& r : cost_param_table())
      if (r.global) known.emplace_back(r.name);
    if (pf.has("gemm_half_flops"))  // a calibration written before the ramp became a time
      pf.problem("gemm_half_flops",
                 "replaced by gemm_ramp_us, the GEMM ramp as a time (microseconds = gemm_half_flops / the GPU's bf16 "
                 "peak FLOP/s * 1e6); regenerate the file with mplan calibrate, or convert the field");
    else
      pf.reject_unknown(known);
    for (const CostParamRow& r : cost_param_table())
      if (auto v = r.global ? bounded(pf, r.name) : std::nullopt) c.params.*r.member = *v;
    c.params.gemm_tile_m = int(pf.integer_or("gemm_tile_m", c.params.gemm_tile_m, 1, 4096));
    c.params.gemm_tile_n = int(pf.integer_or("gemm_tile_n", c.params.gemm_tile_n, 1, 4096));
    for (const auto& [map, what, names] : {std::tuple{"precision_eff", "a precision", training_precision_choices()},
                                           {"framework_eff", "a framework", join_names(framework_choices(), "|")}}) {
      const json* mj = pf.object(map);
      if (!mj) continue;
      JsonFields mf(*mj, std::string("calibration.params.") + map, problems);
      for (auto it = mj->begin(); it != mj->end(); ++it) {
        const std::string name = map + ("." + it.key());  // a row of the table, or a map entry of range (0, 1]
        if (double* ref = cost_param_ref(c.params, name); !ref)
          mf.problem(it.key(), std::string("not ") + what + "; expected one of " + names);
        else if (auto v = bounded(mf, it.key().c_str(), name))
          *ref = *v;
      }
    }
  }
  if (const json* aj = f.object("by_arch")) {
    for (auto it = aj->begin(); it != aj->end(); ++it) {
      if (!it.value().is_object()) {
        problems.push_back("calibration.by_arch." + it.key() + ": expected an object of parameter overrides");
        continue;
      }
      JsonFields af(it.value(), "calibration.by_arch." + it.key(), problems);
      for (auto p = it.value().begin(); p != it.value().end(); ++p) {
        CostParams probe;
        if (!cost_param_ref(probe, p.key()))
          af.problem(p.key(), "unknown parameter");
        else if (auto v = bounded(af, p.key().c_str()))
          c.by_arch[it.key()][p.key()] = *v;
      }
    }
  }
  if (f.has("fit")) {
    if (const json* fj = f.object("fit")) c.fit = *fj;
  }
  if (f.has("intervals")) {
    if (const json* ij = f.object("intervals")) {
      for (auto it = ij->begin(); it != ij->end(); ++it) {
        if (!interval_bounds(it.value()))
          problems.push_back("calibration.intervals." + it.key() + ": expected {\"lo\": number, \"hi\": number} with lo <= hi");
      }
      c.intervals = *ij;
    }
  }
  for (const CostParamRow& r : cost_param_table())  // the efficiencies of the base too
    if (r.global && r.range.lo_open && (c.params.*r.member <= 0 || c.params.*r.member > 1.0))
      problems.push_back("calibration.params: efficiencies must be in (0, 1]");
  if (!problems.empty()) return Error(problems);
  return c;
}

std::string calibration_arch(const Calibration& c) {
  if (!c.arch.empty() || c.gpu.empty()) return c.arch;
  for (const auto& name : cluster_preset_names()) {  // files written before "arch": the preset GPU they name
    auto cl = cluster_preset(name);
    if (cl && cl->gpu.name == c.gpu) return cl->gpu.arch;
  }
  return "";
}

std::string calibration_mismatch(const Calibration& c, const GpuSpec& gpu) {
  std::string arch = calibration_arch(c);
  if (arch.empty() || gpu.arch.empty() || arch == gpu.arch || c.by_arch.count(gpu.arch)) return "";
  return "the calibration was fitted for " + arch + (c.gpu.empty() ? "" : " (" + c.gpu + ")") + " GPUs, but the plan's GPU " +
         gpu.name + " is " + gpu.arch + "; kernel efficiencies do not transfer between architectures. Use a calibration of " +
         "this GPU (mplan calibrate), leave --calibration out for the shipped one, or pass --force to apply it anyway";
}

Expected<Calibration> read_calibration_file(const std::string& path, const CostParams& base) {
  std::vector<std::string> problems;
  auto text = read_text_file(path, problems);
  if (!text) return Error(problems);
  auto j = parse_json_text(*text, path, problems);
  if (!j) return Error(problems);
  auto r = calibration_from_json(*j, base);
  if (!r) {
    std::vector<std::string> msgs;
    for (auto& e : r.error().problems) msgs.push_back(path + ": " + e);
    return Error(msgs);
  }
  return r;
}

}  // namespace mplan
