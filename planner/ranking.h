// Ranking of simulated candidates: by step time (throughput) or by peak memory (memory headroom,
// then step time), ties broken by the layout's total order, so the order never depends on which
// thread finished first. GroupedTop keeps the best K groups of layouts that differ only in
// refinements (group_ranked in planner.h) and what may still join them.
#pragma once
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "planner/layout.h"
#include "planner/planner.h"

namespace mplan::planner {

// The search's most frequent reasons layouts were rejected (at most five, most frequent first): those
// that did not fit the `cap_gib` GiB of `gpu` (with the closest layout noted, `closest_gib` finite),
// each rule's rejections, and `no_structures`: nothing matched --fix/--max for `world` GPUs.
std::vector<std::string> rejection_reasons(const SearchStats& st, int64_t nonfit_simulated, double cap_gib,
                                           const std::string& gpu, double closest_gib, const Layout& closest, bool no_structures,
                                           int world);

// True when `a` ranks before `b`.
bool ranks_before(Objective obj, const Candidate& a, const Candidate& b);

// Marks the candidates whose 80 % step-time interval overlaps the first one's as tied with it, and says
// for each which measurement would separate the two (separating_measurement).
void mark_ties(std::vector<Candidate>& ranked);
// Where two predictions differ most (time breakdown, then ops) and what to measure to tell them apart.
std::string separating_measurement(const StepReport& a, const StepReport& b);

// The structure of a layout with its refinements cleared: vpp (and the interleaved schedule it
// implies), the pipeline split, the TP-comm and MoE all-to-all overlap flags. Layouts with equal keys
// differ only in refinements.
Layout group_key(const Layout& l);
// True when `member`'s 80 % step-time interval overlaps `best`'s (member.lo <= best.hi).
bool interval_overlaps(const StepReport& best, const StepReport& member);

// The best K groups of the candidates offered so far, and every candidate that may still be a member of
// one of them. With `distinct` false (or the memory-headroom objective) every layout is its own group.
class GroupedTop {
 public:
  GroupedTop(Objective obj, int k, bool distinct)
      : obj_(obj), k_(size_t(k)), distinct_(distinct && obj == Objective::throughput) {}
  // Holds `c` when it may lead or join a top group; settle() (after a batch of offers) regroups.
  void offer(Candidate c);
  void settle();
  // The K-th group's best key (step time or peak memory); +inf while fewer than K groups are held.
  // Never rises as candidates are offered: a candidate whose bound exceeds it cannot lead a top group.
  double threshold() const { return threshold_; }
  // The step time beyond which nothing can lead or join a top group (+inf while fewer than K groups are
  // held; the distinct mode only). Never rises either.
  double keep_limit() const { return keep_limit_; }
  // Per top group: its key and the largest step time a member can have (the best's interval end
  // converted back to a step time); empty when nothing folds.
  std::vector<std::pair<Layout, double>> member_limits();
  GroupedResult take();
  bool distinct() const { return distinct_; }

 private:
  struct Item {
    std::unique_ptr<Candidate> c;  // held by pointer: sorting and merging move pointers, not reports
    int key;                       // id of group_key(layout)
  };
  int key_id(const Layout& l);
  std::vector<size_t> groups(std::vector<char>& is_best) const;
  Objective obj_;
  size_t k_;
  bool distinct_;
  std::vector<Item> items_;    // sorted best first (as of the last settle)
  std::vector<Item> pending_;  // offered since
  std::map<Layout, int> key_ids_;
  std::vector<Layout> key_layouts_;
  double threshold_ = std::numeric_limits<double>::infinity();
  double keep_limit_ = std::numeric_limits<double>::infinity();  // step time beyond which nothing can join
};

}  // namespace mplan::planner
