// Copy of the simulator's cost formulas for the fit (see cost_eval.h: keep in sync).
#include "profiles/cost_eval.h"

#include <algorithm>
#include <cmath>

namespace mplan::profiles {

OpKind op_kind_of(const std::string& op) {
  auto ends_with = [&](const char* suf) {
    std::string s(suf);
    return op.size() >= s.size() && op.compare(op.size() - s.size(), s.size(), s) == 0;
  };
  // "gemm": a plain GEMM benchmark not tied to a layer (published GEMM sweeps)
  if (ends_with("_gemm") || op == "router" || op == "gemm") return OpKind::gemm;
  if (op == "attn_core") return OpKind::attention;
  if (ends_with("_norm")) return OpKind::norm;
  if (op == "embedding") return OpKind::embedding;
  if (op == "cross_entropy") return OpKind::loss;
  if (op == "adamw") return OpKind::optimizer;
  if (ends_with("_a2a") || ends_with("_allgather") || ends_with("_reduce_scatter") || ends_with("_allreduce") ||
      ends_with("_exchange") || op == "pp_send_recv")
    return OpKind::comm;
  return OpKind::elementwise;
}

std::string fit_class_of(const KernelRow& r) {
  OpKind k = op_kind_of(r.op);
  if (k == OpKind::gemm || k == OpKind::attention || k == OpKind::comm) return to_string(k);
  return "memory";
}

namespace {
double peak_flops(const ClusterSpec& c, Precision p) {
  auto v = c.gpu.peak(p);
  if (!v) v = c.gpu.peak(Precision::bf16);
  if (!v) v = c.gpu.peak_tflops.begin()->second;
  return *v * 1e12;
}
double hbm(const ClusterSpec& c, const CostParams& p) { return c.gpu.hbm_gbps * 1e9 * p.hbm_eff; }
double overhead(const CostParams& p) { return p.kernel_overhead_us * 1e-6; }

struct Link {
  double bw, alpha;
};
Link nvlink(const ClusterSpec& c, const CostParams& p) { return {c.scale_up_bw_gbps * 1e9 * p.nvlink_eff, c.scale_up_latency_us * 1e-6}; }
Link network(const ClusterSpec& c, const CostParams& p) {
  return {c.scale_out_bw_gbps * 1e9 * p.network_eff, c.scale_out_latency_us * 1e-6};
}

double flat(Collective c, double bytes, int n, const Link& l) {
  if (n <= 1 || bytes <= 0) return 0;
  double f = collective_busbw_factor(c, n);
  double ring_steps = c == Collective::all_reduce ? 2.0 * (n - 1) : double(n - 1);
  double ring = ring_steps * l.alpha + bytes * f / l.bw;
  if (c != Collective::all_reduce) return ring;
  double tree = 2.0 * std::ceil(std::log2(double(n))) * l.alpha + bytes * f / l.bw;
  return std::min(ring, tree);
}
}  // namespace

double eval_wave_eff(int64_t m, int64_t n, int64_t groups, int sm_count, const CostParams& p) {
  double tiles = std::ceil(double(m) / p.gemm_tile_m) * std::ceil(double(n) / p.gemm_tile_n) * double(std::max<int64_t>(1, groups));
  double sms = std::max(1, sm_count);
  double waves = std::ceil(tiles / sms);
  return tiles / (waves * sms);
}

double eval_gemm_time_s(const GemmShape& s, Precision prec, const ClusterSpec& c, const CostParams& p) {
  double W = 2.0 * double(s.m) * double(s.n) * double(s.k) * double(s.groups);
  if (W <= 0) return 0;
  double sat = W / (W + p.gemm_half_flops * (peak_flops(c, prec) / peak_flops(c, Precision::bf16)));
  double eff = p.gemm_eff_max * p.eff_for(prec) * eval_wave_eff(s.m, s.n, s.groups, c.gpu.sm_count, p) * sat;
  double bytes = gemm_input_bytes(prec) * double(s.groups) * (double(s.m) * s.k + double(s.k) * s.n) +
                 2.0 * double(s.groups) * double(s.m) * s.n;
  double t = W / (peak_flops(c, prec) * eff);
  return std::max(t, bytes / hbm(c, p)) + overhead(p);
}

double predict_kernel_s(const KernelRow& r, const ClusterSpec& c, const CostParams& p) {
  Precision prec = parse_precision(r.dtype).value_or(Precision::fp32);
  switch (op_kind_of(r.op)) {
    case OpKind::gemm:
      return eval_gemm_time_s({r.m, r.n, r.k, std::max<int64_t>(1, r.groups)}, prec, c, p);
    case OpKind::attention: {
      // rows carry the flops of their pass; backward is charged 2x the forward flops
      double pk = peak_flops(c, Precision::bf16);
      double fwd_flops = r.pass == "fwd" ? r.flops : r.flops / 2.0;
      double sat = fwd_flops / (fwd_flops + p.gemm_half_flops);
      double eff = r.pass == "fwd" ? p.attn_fwd_eff : p.attn_bwd_eff;
      return r.flops / (pk * eff * sat) + overhead(p);
    }
    default:
      // memory-bound: rows carry the bytes of their pass (backward = 2x forward bytes)
      return r.bytes / hbm(c, p) + overhead(p);
  }
}

std::optional<Collective> parse_collective(const std::string& s) {
  for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::all_to_all,
                       Collective::send_recv, Collective::broadcast})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

double eval_collective_time_s(Collective c, double bytes, int n, int domains, int max_per_domain, const ClusterSpec& cl,
                              const CostParams& p) {
  if (n <= 1 || bytes <= 0) return 0;
  Link nv = nvlink(cl, p), net = network(cl, p);
  int D = std::max(1, domains);
  int k = std::max(1, max_per_domain);
  if (c == Collective::send_recv) return D > 1 ? net.alpha + bytes / net.bw : nv.alpha + bytes / nv.bw;
  if (c == Collective::all_to_all) {
    double intra = bytes * double(k - 1) / n / nv.bw;
    double inter = D > 1 ? bytes * double(n - k) / n / net.bw : 0;
    double lat = (k > 1 ? nv.alpha : 0) + (D > 1 ? net.alpha : 0);
    return lat * std::ceil(std::log2(double(n))) + std::max(intra, inter) / p.a2a_eff;
  }
  if (D == 1) return flat(c, bytes, n, nv);
  if (k == 1) return flat(c, bytes, n, net);
  switch (c) {
    case Collective::all_reduce:
      return flat(Collective::reduce_scatter, bytes, k, nv) + flat(Collective::all_reduce, bytes / k, D, net) +
             flat(Collective::all_gather, bytes, k, nv);
    case Collective::all_gather:
    case Collective::reduce_scatter:
      return flat(c, bytes / k, D, net) + flat(c, bytes, k, nv);
    default:
      return flat(c, bytes, n, net);
  }
}

double predict_collective_s(const CollectiveRow& r, const ClusterSpec& c, const CostParams& p) {
  auto coll = parse_collective(r.op).value_or(Collective::all_reduce);
  int domains = std::max(1, r.domains);
  int per = (r.group_size + domains - 1) / domains;
  return eval_collective_time_s(coll, double(r.bytes), r.group_size, domains, per, c, p);
}

}  // namespace mplan::profiles
