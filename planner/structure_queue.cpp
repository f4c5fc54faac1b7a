// StructureQueue (see structure_queue.h).
#include "planner/structure_queue.h"

#include <algorithm>
#include <functional>

namespace mplan::planner {

namespace {
constexpr size_t kResolveBatch = 256;  // structures resolved together (on the search's threads)
}  // namespace

void StructureQueue::reset(std::vector<Item> cheap, Resolve resolve) {
  order_ = std::move(cheap);
  std::sort(order_.begin(), order_.end(), [](const Item& a, const Item& b) { return b > a; });
  next_ = 0;
  resolved_.clear();
  resolved_bounds_.clear();
  popped_ = 0;
  resolve_ = std::move(resolve);
}

void StructureQueue::resolve_next(double limit) {
  index_.clear();
  const size_t first = next_;
  while (next_ < order_.size() && index_.size() < kResolveBatch && (index_.empty() || order_[next_].bound <= limit))
    index_.push_back(order_[next_++].index);
  bound_.assign(index_.size(), 0.0);
  resolve_(index_, bound_);
  const size_t had = resolved_bounds_.size();
  for (size_t k = 0; k < index_.size(); ++k) {
    resolved_.push_back({bound_[k], order_[first + k].order, index_[k], false});
    std::push_heap(resolved_.begin(), resolved_.end(), std::greater<Item>());
    resolved_bounds_.push_back(bound_[k]);
  }
  std::sort(resolved_bounds_.begin() + std::ptrdiff_t(had), resolved_bounds_.end());
  std::inplace_merge(resolved_bounds_.begin(), resolved_bounds_.begin() + std::ptrdiff_t(had), resolved_bounds_.end());
}

const Item* StructureQueue::front(const Item* other, double limit) {
  while (true) {
    const Item* r = resolved_.empty() ? nullptr : &resolved_.front();
    if (next_ >= order_.size()) return r;
    const Item& u = order_[next_];
    // every unresolved structure's item is at or after u (its bound is at least its cheap one)
    if (r && u > *r) return r;
    if ((other && u > *other) || u.bound > limit) return &u;
    resolve_next(limit);
  }
}

Item StructureQueue::pop_front() {
  while (next_ < order_.size() && (resolved_.empty() || !(order_[next_] > resolved_.front()))) resolve_next(order_[next_].bound);
  std::pop_heap(resolved_.begin(), resolved_.end(), std::greater<Item>());
  Item it = resolved_.back();
  resolved_.pop_back();
  ++popped_;
  return it;
}

size_t StructureQueue::live(double limit) const {
  auto end = std::upper_bound(order_.begin() + std::ptrdiff_t(next_), order_.end(), limit,
                              [](double t, const Item& it) { return t < it.bound; });
  const size_t unresolved = size_t(end - (order_.begin() + std::ptrdiff_t(next_)));
  // the resolved ones under the limit, less those popped (the smallest ones)
  const size_t under =
      size_t(std::upper_bound(resolved_bounds_.begin(), resolved_bounds_.end(), limit) - resolved_bounds_.begin());
  return unresolved + (under > popped_ ? under - popped_ : 0);
}

void StructureQueue::for_each_left(const std::function<void(int64_t)>& f) const {
  for (const Item& it : resolved_) f(it.index);
  for (size_t k = next_; k < order_.size(); ++k) f(order_[k].index);
}

}  // namespace mplan::planner
