// Longest path, slack and grouping of the step's dependency DAG with Boost.Graph (see critical_path.h).
#include "simulator/critical_path.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dag_shortest_paths.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>

namespace mplan {

namespace {

struct EdgeWeight {
  double w = 0;  // duration of the source event + lag
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property, EdgeWeight>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

// Longest paths from `src` in `g` (a DAG) with a max-plus order.
template <class G, class W>
void longest_from(const G& g, typename boost::graph_traits<G>::vertex_descriptor src, W weight, std::vector<double>& dist,
                  std::vector<typename boost::graph_traits<G>::vertex_descriptor>& pred) {
  dist.assign(boost::num_vertices(g), 0.0);
  pred.resize(boost::num_vertices(g));
  boost::dag_shortest_paths(g, src,
                            boost::weight_map(weight)
                                .distance_map(dist.data())
                                .predecessor_map(pred.data())
                                .distance_compare(std::greater<double>())
                                .distance_combine(std::plus<double>())
                                .distance_inf(-std::numeric_limits<double>::infinity())
                                .distance_zero(0.0));
}

}  // namespace

std::string event_kind_name(const StepEvent& e, int zero) {
  switch (e.kind) {
    case StepEvent::Kind::forward:
      return "forward";
    case StepEvent::Kind::backward:
      return "backward";
    case StepEvent::Kind::weight_grad:
      return "weight gradient";
    case StepEvent::Kind::p2p:
      return "pp p2p";
    case StepEvent::Kind::dp_grad:
      return zero == 0 ? "dp all-reduce" : "dp reduce-scatter";
    case StepEvent::Kind::optimizer:
      return "optimizer";
    case StepEvent::Kind::dp_gather:
      return "dp param all-gather";
  }
  return "?";
}

std::string critical_path_summary(const StepReport& r, size_t max_kinds) {
  std::string s;
  size_t shown = 0;
  for (const CriticalKindShare& k : r.critical_by_kind) {
    if (shown == max_kinds || k.share < 0.005) break;
    char pct[32];
    std::snprintf(pct, sizeof pct, " %.0f%%", 100 * k.share);
    s += (shown++ ? ", " : "") + k.kind + pct;
  }
  if (shown < r.critical_by_kind.size() && !s.empty()) s += ", ...";
  return s;
}

CriticalPathResult critical_path(const StepGraph& sg, int zeroed) {
  const int n = int(sg.events.size());
  auto dur = [&](int i) { return i == zeroed ? 0.0 : sg.events[size_t(i)].dur_s; };
  // vertices 0..n-1: the events; n: source; n+1: sink
  Graph g(size_t(n) + 2);
  const Vertex src = Vertex(n), sink = Vertex(n) + 1;
  std::vector<char> has_in(size_t(n), 0), has_out(size_t(n), 0);
  for (const StepEdge& e : sg.edges) {
    boost::add_edge(Vertex(e.from), Vertex(e.to), EdgeWeight{dur(e.from) + e.lag}, g);
    has_out[size_t(e.from)] = 1;
    has_in[size_t(e.to)] = 1;
  }
  for (int i = 0; i < n; ++i) {
    if (!has_in[size_t(i)]) boost::add_edge(src, Vertex(i), EdgeWeight{0.0}, g);
    if (!has_out[size_t(i)]) boost::add_edge(Vertex(i), sink, EdgeWeight{dur(i)}, g);
  }
  auto weight = boost::get(&EdgeWeight::w, g);
  std::vector<double> to_start, from_start;
  std::vector<Vertex> pred, rpred;
  longest_from(g, src, weight, to_start, pred);
  auto rg = boost::make_reverse_graph(g);
  longest_from(rg, sink, boost::get(&EdgeWeight::w, rg), from_start, rpred);

  CriticalPathResult r;
  r.length_s = n > 0 ? to_start[sink] : 0.0;
  r.earliest_s.assign(to_start.begin(), to_start.begin() + n);
  r.slack_s.resize(size_t(n));
  for (int i = 0; i < n; ++i) r.slack_s[size_t(i)] = std::max(0.0, r.length_s - to_start[size_t(i)] - from_start[size_t(i)]);
  if (n == 0) return r;
  for (Vertex v = pred[sink]; v != src && v != sink; v = pred[v]) r.path.push_back(int(v));
  std::reverse(r.path.begin(), r.path.end());

  // the path's time by kind: each event contributes until the next one starts (a gradient bucket
  // ready during a backward cuts that backward short), split by its parts
  std::map<std::string, double> by;
  for (size_t k = 0; k < r.path.size(); ++k) {
    const int i = r.path[k];
    const StepEvent& e = sg.events[size_t(i)];
    double next = k + 1 < r.path.size() ? to_start[size_t(r.path[k + 1])] : r.length_s;
    double c = std::max(0.0, next - to_start[size_t(i)]);
    if (c <= 0) continue;
    const std::string stage = "stage " + std::to_string(e.stage) + " ";
    const bool action =
        e.kind == StepEvent::Kind::forward || e.kind == StepEvent::Kind::backward || e.kind == StepEvent::Kind::weight_grad;
    const double total = e.parts.total();
    if (!action || total <= 0 || dur(i) <= 0) {
      std::string kind = event_kind_name(e, sg.zero);
      if (e.kind == StepEvent::Kind::dp_grad) kind += " tail";
      if (e.kind == StepEvent::Kind::optimizer || e.kind == StepEvent::Kind::dp_gather) kind = stage + kind;
      if (action) kind = stage + kind;
      by[kind] += c;
      continue;
    }
    const double k_part = c / total;
    by[stage + event_kind_name(e, sg.zero)] += (e.parts.compute + e.parts.recompute) * k_part;
    const std::pair<const char*, double> comm[] = {{"tp comm exposed", e.parts.tp},
                                                   {"cp comm exposed", e.parts.cp},
                                                   {"ep comm exposed", e.parts.ep},
                                                   {"fsdp comm exposed", e.parts.dp},
                                                   {"offload exposed", e.parts.host}};
    for (const auto& [name, t] : comm)
      if (t > 0) by[name] += t * k_part;
  }
  for (const auto& [kind, t] : by)
    if (t > 0) r.by_kind.push_back({kind, t, r.length_s > 0 ? t / r.length_s : 0.0});
  std::stable_sort(r.by_kind.begin(), r.by_kind.end(),
                   [](const CriticalKindShare& a, const CriticalKindShare& b) { return a.time_s > b.time_s; });
  return r;
}

}  // namespace mplan
