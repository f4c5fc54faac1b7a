// Ranking of simulated candidates: by step time (throughput) or by peak memory (memory headroom,
// then step time), ties broken by the layout's total order, so the order never depends on which
// thread finished first. TopK keeps the best K.
#pragma once
#include <limits>
#include <vector>

#include "planner/planner.h"

namespace mplan::planner {

// True when `a` ranks before `b`.
bool ranks_before(Objective obj, const Candidate& a, const Candidate& b);

// Marks the candidates whose 80 % step-time interval overlaps the first one's as tied with it, and says
// for each which measurement would separate the two (separating_measurement).
void mark_ties(std::vector<Candidate>& ranked);
// Where two predictions differ most (time breakdown, then ops) and what to measure to tell them apart.
std::string separating_measurement(const StepReport& a, const StepReport& b);

class TopK {
 public:
  TopK(Objective obj, int k) : obj_(obj), k_(size_t(k)) {}
  void offer(Candidate c);
  // The K-th best key (step time or peak memory); +inf while fewer than K are held.
  double threshold() const;
  std::vector<Candidate> take() { return std::move(items_); }
  size_t size() const { return items_.size(); }

 private:
  Objective obj_;
  size_t k_;
  std::vector<Candidate> items_;  // sorted best first
};

}  // namespace mplan::planner
