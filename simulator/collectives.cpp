// Hierarchical alpha-beta collective model. A group of n ranks spanning D NVLink domains with k
// members each runs (for all-reduce) reduce-scatter inside domains, all-reduce across domains on
// bytes/k per rank through each rank's own NIC (rail-optimised fabric), and all-gather inside domains.
// Ring and tree (double binary tree: log-depth latency) variants are costed and the faster taken,
// as NCCL's tuner does.
#include "simulator/collectives.h"

#include <algorithm>
#include <cmath>

namespace mplan {

namespace {

struct Link {
  double bw;     // bytes/s per direction, achieved
  double alpha;  // s per step
};

Link nvlink(const ClusterSpec& c, const CostParams& p) {
  return {c.scale_up_bw_gbps * 1e9 * p.nvlink_eff, c.scale_up_latency_us * 1e-6};
}
Link network(const ClusterSpec& c, const CostParams& p) {
  return {c.scale_out_bw_gbps * 1e9 * p.network_eff, c.scale_out_latency_us * 1e-6};
}

// Flat collective among n ranks on one kind of link: ring (n-1 steps per phase) or tree (log depth).
// Inlined into collective_time_s: the planner's bounds cost millions of collectives per search.
[[gnu::always_inline]] inline double flat(Collective c, double bytes, int n, const Link& l) {
  if (n <= 1 || bytes <= 0) return 0;
  double f = collective_busbw_factor(c, n);
  double ring_steps = c == Collective::all_reduce ? 2.0 * (n - 1) : double(n - 1);
  double ring = ring_steps * l.alpha + bytes * f / l.bw;
  if (c != Collective::all_reduce) return ring;
  // double binary tree: latency 2*log2(n) steps; bandwidth term as ring's (both trees pipelined)
  double tree = 2.0 * std::ceil(std::log2(double(n))) * l.alpha + bytes * f / l.bw;
  return std::min(ring, tree);
}

}  // namespace

double collective_time_s(Collective c, double bytes, const GroupPlacement& g, const ClusterSpec& cl, const CostParams& p) {
  if (c == Collective::all_to_all) return moe_all_to_all_time_s(bytes, 1.0, g, cl, p);
  int n = g.size;
  if (n <= 1 || bytes <= 0) return 0;
  Link nv = nvlink(cl, p), net = network(cl, p);
  int D = std::max(1, g.domains);
  int k = std::max(1, g.max_per_domain);
  if (c == Collective::send_recv) return D > 1 ? net.alpha + bytes / net.bw : nv.alpha + bytes / nv.bw;
  if (D == 1) return flat(c, bytes, n, nv);
  if (k == 1) return flat(c, bytes, n, net);
  // hierarchical: intra-domain phase(s) on the full buffer, inter-domain phase on 1/k of it
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

// (the all-to-all of every group; see collectives.h)
double moe_all_to_all_time_s(double bytes, double remote_share, const GroupPlacement& g, const ClusterSpec& cl,
                             const CostParams& p, double local_share) {
  int n = g.size;
  if (n <= 1 || bytes <= 0) return 0;
  Link nv = nvlink(cl, p), net = network(cl, p);
  int D = std::max(1, g.domains);
  int k = std::max(1, g.max_per_domain);
  // each rank sends (n-1)/n of its buffer: (k-1)/n stays in the domain, (n-k)/n crosses the network
  double intra = local_share * bytes * double(k - 1) / n / nv.bw;
  double inter = D > 1 ? remote_share * bytes * double(n - k) / n / net.bw : 0;
  double lat = (k > 1 ? nv.alpha : 0) + (D > 1 ? net.alpha : 0);
  return lat * std::ceil(std::log2(double(n))) + std::max(intra, inter) / p.a2a_eff;
}

double moe_remote_share(int experts, int top_k, const GroupPlacement& g, int num_groups, int group_topk) {
  int D = std::max(1, g.domains);
  if (D <= 1 || g.size <= 1 || experts <= 0 || top_k <= 0) return 1.0;
  double E = experts, per_domain = E * double(std::max(1, g.max_per_domain)) / g.size;
  double miss = 1.0;  // P(none of the k distinct experts lies in a given remote domain)
  for (int i = 0; i < top_k && miss > 0; ++i) miss *= std::max(0.0, (E - per_domain - i) / (E - i));
  double copies = top_k * (1.0 - per_domain / E);  // remote copies per token of a plain all-to-all
  double sends = (E / per_domain - 1.0) * (1.0 - miss);
  if (num_groups > 0 && group_topk > 0 && group_topk < num_groups) {
    // experts are laid out in order, so a group spans ceil(group / per_domain) domains; of the at most
    // group_topk * that many domains a token reaches, one in D is its own
    double group = E / num_groups;
    double spans = std::max(1.0, std::ceil(group / per_domain - 1e-9));
    double reached = std::min(double(D), group_topk * spans);
    sends = std::min(sends, reached * (D - 1.0) / D);
  }
  return copies > 0 ? std::min(1.0, sends / copies) : 1.0;
}

double moe_local_share(int experts, int top_k, const GroupPlacement& g) {
  const int n = g.size;
  if (n <= 1 || experts <= 0 || top_k <= 1 || experts % n != 0) return 1.0;
  const double E = experts, per_rank = E / n;
  double miss = 1.0;  // P(none of the k distinct experts lies on a given rank)
  for (int i = 0; i < top_k && miss > 0; ++i) miss *= std::max(0.0, (E - per_rank - i) / (E - i));
  return std::min(1.0, n * (1.0 - miss) / top_k);
}

double p2p_time_s(double bytes, bool same_domain, const ClusterSpec& cl, const CostParams& p) {
  if (bytes <= 0) return 0;
  Link l = same_domain ? nvlink(cl, p) : network(cl, p);
  return l.alpha + bytes / l.bw;
}

}  // namespace mplan
