// Profile rows -> the simulator's cost formulas (see cost_eval.h).
#include "profiles/cost_eval.h"

#include "simulator/collectives.h"
#include "simulator/compute_cost.h"

#include <algorithm>

namespace mplan::profiles {

OpKind op_kind_of(const std::string& op) {
  if (auto id = op_id(op)) return op_info(*id).kind;  // a vocabulary op: its kind from the one table
  // any other name by its suffix ("gemm": a plain GEMM benchmark not tied to a layer, published GEMM sweeps)
  auto ends_with = [&](const char* suf) {
    std::string s(suf);
    return op.size() >= s.size() && op.compare(op.size() - s.size(), s.size(), s) == 0;
  };
  if (ends_with("_gemm") || op == "gemm") return OpKind::gemm;
  if (ends_with("_norm")) return OpKind::norm;
  if (ends_with("_a2a") || ends_with("_allgather") || ends_with("_reduce_scatter") || ends_with("_allreduce") ||
      ends_with("_exchange"))
    return OpKind::comm;
  return OpKind::elementwise;
}

std::string fit_class_of(const KernelRow& r) {
  OpKind k = op_kind_of(r.op);
  if (k == OpKind::gemm || k == OpKind::attention || k == OpKind::comm) return to_string(k);
  return "memory";
}

double predict_kernel_s(const KernelRow& r, const ClusterSpec& c, const CostParams& p) {
  Precision prec = parse_precision(r.dtype).value_or(Precision::fp32);
  OpKind kind = op_kind_of(r.op);
  if (kind == OpKind::gemm) return gemm_time_s({r.m, r.n, r.k, std::max<int64_t>(1, r.groups)}, prec, c, p);
  // Other rows carry the flops/bytes of their pass; the simulator charges a backward pass 2x the
  // forward flops (attention) or bytes (memory-bound ops), so the forward op is rebuilt from them.
  const bool fwd = r.pass == "fwd";
  Op op;
  op.id = op_id(r.op).value_or(OpId::count);
  op.name = r.op;
  op.kind = kind;
  op.fwd_flops = fwd ? r.flops : r.flops / 2.0;
  op.fwd_bytes = fwd ? r.bytes : r.bytes / 2.0;
  OpCost cost = compute_op_cost(op, prec, c, p);
  return fwd ? cost.fwd_s : cost.bwd_input_s;
}

std::optional<Collective> parse_collective(const std::string& s) {
  for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::all_to_all,
                       Collective::send_recv, Collective::broadcast})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

double eval_collective_time_s(Collective coll, double bytes, int n, int domains, int max_per_domain, const ClusterSpec& c,
                              const CostParams& p) {
  GroupPlacement g;
  g.size = n;
  g.domains = std::max(1, domains);
  g.max_per_domain = std::max(1, max_per_domain);
  g.uniform = g.domains * g.max_per_domain == n;
  return collective_time_s(coll, bytes, g, c, p);
}

double predict_collective_s(const CollectiveRow& r, const ClusterSpec& c, const CostParams& p) {
  auto coll = parse_collective(r.op).value_or(Collective::all_reduce);
  int domains = std::max(1, r.domains);
  int per = (r.group_size + domains - 1) / domains;
  return eval_collective_time_s(coll, double(r.bytes), r.group_size, domains, per, c, p);
}

}  // namespace mplan::profiles
