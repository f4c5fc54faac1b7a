// Tensor allocation (aligned, zeroed, tracked) and shape printing.
#include "executor/tensor/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace mplan::exec {

Tensor Tensor::zeros(std::vector<int64_t> shape, MemoryTracker* tracker) {
  Tensor t;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  t.shape_ = std::move(shape);
  t.numel_ = n;
  size_t bytes = size_t(n > 0 ? n : 1) * sizeof(float);
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  int64_t counted = int64_t(n) * int64_t(sizeof(float));
  if (tracker) tracker->add(counted);
  t.ptr_ = std::shared_ptr<float>(static_cast<float*>(p), [tracker, counted](float* q) {
    if (tracker) tracker->sub(counted);
    std::free(q);
  });
  return t;
}

Tensor Tensor::adopt(std::shared_ptr<float> storage, std::vector<int64_t> shape) {
  Tensor t;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  t.shape_ = std::move(shape);
  t.numel_ = n;
  t.ptr_ = std::move(storage);
  return t;
}

std::string Tensor::shape_str() const {
  std::string s = "(";
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape_[i]);
  }
  return s + ")";
}

}  // namespace mplan::exec
