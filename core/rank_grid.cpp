// RankGrid: group enumeration in Megatron's rank order and group placement on NVLink domains.
#include "core/rank_grid.h"

#include <algorithm>
#include <cassert>
#include <cstdint>

namespace mplan {

std::string to_string(Dim d) {
  switch (d) {
    case Dim::tp:
      return "tp";
    case Dim::cp:
      return "cp";
    case Dim::dp:
      return "dp";
    case Dim::pp:
      return "pp";
    case Dim::etp:
      return "etp";
    case Dim::ep:
      return "ep";
    case Dim::edp:
      return "edp";
  }
  return "?";
}

RankGrid::RankGrid(int tp, int cp, int dp, int pp, int etp, int ep)
    : tp_(tp), cp_(cp), dp_(dp), pp_(pp), etp_(etp), ep_(ep), edp_((tp * cp * dp) / (etp * ep)) {
  assert(tp >= 1 && cp >= 1 && dp >= 1 && pp >= 1 && etp >= 1 && ep >= 1);
  assert((tp * cp * dp) % (etp * ep) == 0);
}

int RankGrid::size(Dim d) const {
  switch (d) {
    case Dim::tp:
      return tp_;
    case Dim::cp:
      return cp_;
    case Dim::dp:
      return dp_;
    case Dim::pp:
      return pp_;
    case Dim::etp:
      return etp_;
    case Dim::ep:
      return ep_;
    case Dim::edp:
      return edp_;
  }
  return 1;
}

RankCoord RankGrid::coord(int rank) const {
  RankCoord c;
  int r = rank;
  c.tp = r % tp_;
  r /= tp_;
  c.cp = r % cp_;
  r /= cp_;
  c.dp = r % dp_;
  r /= dp_;
  c.pp = r;
  int inner = rank % (tp_ * cp_ * dp_);
  c.etp = inner % etp_;
  inner /= etp_;
  c.ep = inner % ep_;
  inner /= ep_;
  c.edp = inner;
  return c;
}

int RankGrid::rank_of_dense(int tp, int cp, int dp, int pp) const { return tp + tp_ * (cp + cp_ * (dp + dp_ * pp)); }
int RankGrid::rank_of_expert(int etp, int ep, int edp, int pp) const { return etp + etp_ * (ep + ep_ * (edp + edp_ * pp)); }

std::vector<std::vector<int>> RankGrid::groups(Dim d) const { return groups(std::vector<Dim>{d}); }

std::vector<std::vector<int>> RankGrid::groups(const std::vector<Dim>& dims) const {
  bool expert = false, dense = false;
  for (Dim d : dims) {
    if (d == Dim::etp || d == Dim::ep || d == Dim::edp) expert = true;
    if (d == Dim::tp || d == Dim::cp || d == Dim::dp) dense = true;
  }
  assert(!(expert && dense));
  (void)dense;
  // the ordered dimensions of the chosen view, fastest first
  std::vector<Dim> order =
      expert ? std::vector<Dim>{Dim::etp, Dim::ep, Dim::edp, Dim::pp} : std::vector<Dim>{Dim::tp, Dim::cp, Dim::dp, Dim::pp};
  std::vector<int> sizes, strides;
  int stride = 1;
  for (Dim d : order) {
    sizes.push_back(size(d));
    strides.push_back(stride);
    stride *= size(d);
  }
  std::vector<int> in_idx, out_idx;  // positions in `order`
  for (size_t i = 0; i < order.size(); ++i) {
    bool in = std::find(dims.begin(), dims.end(), order[i]) != dims.end();
    (in ? in_idx : out_idx).push_back(int(i));
  }
  auto count = [&](const std::vector<int>& idx) {
    int n = 1;
    for (int i : idx) n *= sizes[i];
    return n;
  };
  std::vector<std::vector<int>> out;
  int n_out = count(out_idx), n_in = count(in_idx);
  for (int o = 0; o < n_out; ++o) {
    int base = 0, rem = o;
    for (int i : out_idx) {
      base += (rem % sizes[i]) * strides[i];
      rem /= sizes[i];
    }
    std::vector<int> g;
    g.reserve(n_in);
    for (int k = 0; k < n_in; ++k) {
      int r = base, rem2 = k;
      for (int i : in_idx) {
        r += (rem2 % sizes[i]) * strides[i];
        rem2 /= sizes[i];
      }
      g.push_back(r);
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<int> RankGrid::group_of(int rank, Dim d) const {
  bool expert = d == Dim::etp || d == Dim::ep || d == Dim::edp;
  std::vector<Dim> order =
      expert ? std::vector<Dim>{Dim::etp, Dim::ep, Dim::edp, Dim::pp} : std::vector<Dim>{Dim::tp, Dim::cp, Dim::dp, Dim::pp};
  int stride = 1;
  for (Dim o : order) {
    if (o == d) break;
    stride *= size(o);
  }
  int n = size(d);
  int idx = (rank / stride) % n;
  int base = rank - idx * stride;
  std::vector<int> g(n);
  for (int k = 0; k < n; ++k) g[k] = base + k * stride;
  return g;
}

GroupPlacement RankGrid::placement(const std::vector<int>& group, int domain_size) {
  // count members per NVLink domain; groups are short, so a sorted copy of the domain ids beats a map
  int D = std::max(1, domain_size);
  std::vector<int> dom(group.size());
  for (size_t i = 0; i < group.size(); ++i) dom[i] = group[i] / D;
  std::sort(dom.begin(), dom.end());
  GroupPlacement p;
  p.size = int(group.size());
  p.domains = 0;
  p.max_per_domain = 0;
  int min_per = INT32_MAX;
  for (size_t i = 0; i < dom.size();) {
    size_t j = i;
    while (j < dom.size() && dom[j] == dom[i]) ++j;
    int n = int(j - i);
    ++p.domains;
    p.max_per_domain = std::max(p.max_per_domain, n);
    min_per = std::min(min_per, n);
    i = j;
  }
  p.uniform = p.domains == 0 || min_per == p.max_per_domain;
  if (p.domains == 0) p.domains = 1;
  return p;
}

GroupPlacement RankGrid::placement(Dim d, int domain_size) const {
  // Groups along one dimension differ only by an offset: a sample of groups spread over the grid is
  // checked and the worst placement (most domains spanned) is reported. Members of a group are
  // increasing ranks base + k*stride, so each domain holds one run of them; with stride < domain no
  // domain between the first and the last is skipped, and a domain's run is counted in closed form
  // (one step per domain, not per member; no allocation).
  const bool expert = d == Dim::etp || d == Dim::ep || d == Dim::edp;
  const Dim dense_order[4] = {Dim::tp, Dim::cp, Dim::dp, Dim::pp};
  const Dim expert_order[4] = {Dim::etp, Dim::ep, Dim::edp, Dim::pp};
  const Dim* order = expert ? expert_order : dense_order;
  int64_t stride = 1;
  for (int i = 0; i < 4 && order[i] != d; ++i) stride *= size(order[i]);
  const int n = size(d);
  const int64_t world = world_size(), dom = std::max(1, domain_size);
  const int samples = int(std::min<int64_t>(world, 16));
  // the first k with base + k*stride >= x (x - base may be negative)
  auto first_at = [&](int64_t x, int64_t base) {
    int64_t a = x - base;
    return a <= 0 ? -((-a) / stride) : (a + stride - 1) / stride;
  };
  // a group's placement depends on its first member only through base % dom (a shift by whole domains
  // shifts every run): samples with a phase seen before reuse its placement
  int64_t phases[16];
  GroupPlacement placed[16];
  int known = 0;
  GroupPlacement worst;
  for (int i = 0; i < samples; ++i) {
    int64_t rank = (world * i) / samples;
    int64_t base = rank - ((rank / stride) % n) * stride;
    GroupPlacement p;
    p.size = n;
    int seen = 0;
    while (seen < known && phases[seen] != base % dom) ++seen;
    if (seen < known) {
      p = placed[seen];
    } else if (stride >= dom) {  // consecutive members at least a domain apart: one per domain
      p.domains = n;
      p.max_per_domain = 1;
      p.uniform = true;
    } else {
      const int64_t first_dom = base / dom, last_dom = (base + int64_t(n - 1) * stride) / dom;
      p.domains = int(last_dom - first_dom + 1);
      p.max_per_domain = 0;
      int64_t min_run = n + 1;
      for (int64_t j = first_dom; j <= last_dom; ++j) {
        int64_t lo = std::max<int64_t>(0, first_at(j * dom, base));
        int64_t hi = std::min<int64_t>(n, first_at((j + 1) * dom, base));
        p.max_per_domain = std::max(p.max_per_domain, int(hi - lo));
        min_run = std::min(min_run, hi - lo);
      }
      p.uniform = min_run == p.max_per_domain;
    }
    if (seen == known) phases[known] = base % dom, placed[known++] = p;
    if (i == 0 || p.domains > worst.domains || (p.domains == worst.domains && !p.uniform)) worst = p;
  }
  return worst;
}

}  // namespace mplan
