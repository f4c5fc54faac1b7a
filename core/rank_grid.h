// RankGrid: which global ranks form each parallel group, in Megatron's order tp-cp-ep-dp-pp (first
// varies fastest; the dense view has ep folded into dp) and the expert view etp-ep-edp-pp. It also
// says how a group sits on the machines: how many NVLink domains it spans.
#pragma once
#include <string>
#include <vector>

#include "core/parallel_config.h"

namespace mplan {

enum class Dim { tp, cp, dp, pp, etp, ep, edp };
std::string to_string(Dim d);

struct RankCoord {
  int tp = 0, cp = 0, dp = 0, pp = 0;  // dense view
  int etp = 0, ep = 0, edp = 0;        // expert view (same pp)
};

// Where a group's members sit: members per NVLink domain and the number of domains touched.
struct GroupPlacement {
  int size = 1;
  int domains = 1;         // NVLink domains spanned
  int max_per_domain = 1;  // most members in one domain
  bool uniform = true;     // every spanned domain holds the same number of members
};

class RankGrid {
 public:
  RankGrid(int tp, int cp, int dp, int pp, int etp = 1, int ep = 1);
  explicit RankGrid(const ParallelConfig& p) : RankGrid(p.tp, p.cp, p.dp(), p.pp, p.etp, p.ep) {}

  int world_size() const { return tp_ * cp_ * dp_ * pp_; }
  int size(Dim d) const;
  RankCoord coord(int rank) const;
  int rank_of_dense(int tp, int cp, int dp, int pp) const;
  int rank_of_expert(int etp, int ep, int edp, int pp) const;

  // All groups along one dimension (each group ordered by that dimension's index), in the order
  // Megatron's RankGenerator lists them.
  std::vector<std::vector<int>> groups(Dim d) const;
  // Groups spanning several dimensions together (e.g. {tp, cp} = Megatron's tensor-and-context group).
  std::vector<std::vector<int>> groups(const std::vector<Dim>& dims) const;
  // The group along `d` that contains `rank`.
  std::vector<int> group_of(int rank, Dim d) const;

  // Placement of a group on machines whose NVLink domains hold `domain_size` consecutive ranks.
  static GroupPlacement placement(const std::vector<int>& group, int domain_size);
  // Placement of the group along `d` containing rank 0 (every group along a dimension is alike when
  // domain_size divides or is divided by the strides; the worst one is returned otherwise).
  GroupPlacement placement(Dim d, int domain_size) const;

 private:
  int tp_, cp_, dp_, pp_, etp_, ep_, edp_;
  std::vector<int> dims_sizes(bool expert) const;
};

}  // namespace mplan
