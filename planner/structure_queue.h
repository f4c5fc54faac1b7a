// The search's queues (search.cpp): the candidates' heap, and the structures (StructureQueue).
// StructureQueue: the structures of a search in best-first order of their bounds, each bound computed
// only when the search reaches it. Every structure enters with a cheap lower bound of its bound
// (floor.h, structure_time_floor: no probe, no chain, no data-parallel collectives); the queue resolves
// (computes the exact structure bound of) the next ones in cheap order only while the first of them
// would come before everything else the search could take next. Since a structure's bound is at least
// its cheap one (the same tie-breaking order), the structures come out in exactly the order of sorting
// them all by their bounds, and the search does exactly what it did with every bound computed up front —
// but on DeepSeek-V3 @ 2,048 GPUs it resolves about a fifth of the 115,899 structures.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace mplan::planner {

// A structure or a candidate in best-first order. Equal bounds pop in creation order (deterministic: the
// expansion order does not depend on threads); the final ranking has its own total order.
struct Item {
  double bound;
  int64_t order;  // structures: -(count - index); candidates: index
  int64_t index;
  bool is_node;
  bool operator>(const Item& o) const { return bound != o.bound ? bound > o.bound : order > o.order; }
};

// A candidate on the heap: half an Item (its order is its node's index; the heap holds millions at
// small GPU counts, and its sifts are cache misses).
struct HeapItem {
  double bound;
  int64_t index;
  bool operator>(const HeapItem& o) const { return bound != o.bound ? bound > o.bound : index > o.index; }
  Item item() const { return {bound, index, index, true}; }
};

// The candidates' heap, smallest bound on top; complete_groups() takes out every item under a bound at once.
struct ItemHeap : std::priority_queue<HeapItem, std::vector<HeapItem>, std::greater<HeapItem>> {
  // The items with a bound at most `b`, in no particular order (the same for the same heap); the rest
  // stay a heap.
  std::vector<HeapItem> take_up_to(double b) {
    auto mid = std::partition(c.begin(), c.end(), [b](const HeapItem& it) { return it.bound <= b; });
    std::vector<HeapItem> out(c.begin(), mid);
    c.erase(c.begin(), mid);
    std::make_heap(c.begin(), c.end(), comp);
    return out;
  }
};

class StructureQueue {
 public:
  // Computes the bounds of the structures `index` into `bound` (each at least its cheap bound).
  using Resolve = std::function<void(const std::vector<int64_t>& index, std::vector<double>& bound)>;
  // `cheap`: one item per structure with its cheap bound (any order).
  void reset(std::vector<Item> cheap, Resolve resolve);
  bool empty() const { return resolved_.empty() && next_ >= order_.size(); }
  // The structure to compare with `other` (a candidate; nullptr: none) and `limit` (the bound above
  // which nothing is taken): the smallest structure when it is resolved; else the first unresolved one
  // with its cheap bound, which is then after `other` or above `limit` (one before both and under the
  // limit is resolved first). nullptr when empty.
  const Item* front(const Item* other, double limit);
  // Takes the smallest structure (resolved first when it is not).
  Item pop_front();
  // Structures left with a bound at most `limit` (the cheap one for those unresolved).
  size_t live(double limit) const;
  // Calls f(index) for every structure left.
  void for_each_left(const std::function<void(int64_t)>& f) const;

 private:
  void resolve_next(double limit);  // resolves the next unresolved structures under `limit` (at least one)
  std::vector<Item> order_;         // cheap bounds, smallest first
  size_t next_ = 0;                 // the first unresolved one
  std::vector<Item> resolved_;      // a min-heap of resolved structures (exact bounds)
  // the bounds of every structure resolved so far, sorted, and how many were popped: the popped ones
  // are the smallest of them (a structure is popped only before every unresolved one), for live()
  std::vector<double> resolved_bounds_;
  size_t popped_ = 0;
  Resolve resolve_;
  std::vector<int64_t> index_;  // scratch
  std::vector<double> bound_;
};

}  // namespace mplan::planner
