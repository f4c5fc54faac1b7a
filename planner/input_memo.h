// InputMemo: a tiny memo of a pure function of a few doubles, for loops that ask the same question
// again (stages or chunks with the same parameters). Keys compare by their bits, so a hit returns
// exactly the doubles the function returned for those arguments; it holds the last `Slots` distinct
// keys (round-robin eviction) and is meant to live on the stack of one call.
#pragma once
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace mplan::planner {

template <size_t NKey, size_t NVal, size_t Slots = 8>
class InputMemo {
 public:
  using Key = std::array<double, NKey>;
  using Val = std::array<double, NVal>;
  // `compute()` -> Val, called only when `k` is not held.
  template <class F>
  Val get(const Key& k, F&& compute) {
    for (size_t i = 0; i < size_; ++i)
      if (same_bits(keys_[i], k)) {
        ++hits_;
        return vals_[i];
      }
    const Val v = compute();
    keys_[next_] = k;
    vals_[next_] = v;
    next_ = (next_ + 1) % Slots;
    if (size_ < Slots) ++size_;
    return v;
  }
  void clear() { size_ = next_ = 0; }
  static bool same_bits(const Key& a, const Key& b) {
    for (size_t j = 0; j < NKey; ++j)
      if (std::bit_cast<uint64_t>(a[j]) != std::bit_cast<uint64_t>(b[j])) return false;
    return true;
  }
  size_t hits() const { return hits_; }

 private:
  std::array<Key, Slots> keys_{};
  std::array<Val, Slots> vals_{};
  size_t size_ = 0, next_ = 0, hits_ = 0;
};

}  // namespace mplan::planner
