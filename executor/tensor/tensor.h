// Tensor: an owned, zero-initialised, 64-byte aligned fp32 buffer with a shape, whose bytes are
// counted by a MemoryTracker (current and peak), so each rank can report the memory it really used.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mplan::exec {

// Bytes of live tensors on one rank (owned by the backend; no global state).
class MemoryTracker {
 public:
  void add(int64_t bytes) {
    current_ += bytes;
    if (current_ > peak_) peak_ = current_;
  }
  void sub(int64_t bytes) { current_ -= bytes; }
  int64_t current() const { return current_; }
  int64_t peak() const { return peak_; }
  void reset_peak() { peak_ = current_; }

 private:
  int64_t current_ = 0;
  int64_t peak_ = 0;
};

enum class DType { f32 };  // the CPU backend trains in fp32; the CUDA backend adds bf16

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor of `shape` counted by `tracker` (may be null).
  static Tensor zeros(std::vector<int64_t> shape, MemoryTracker* tracker);
  // Tensor over memory a backend allocated (e.g. CUDA managed memory); the deleter of `storage`
  // returns it and uncounts it.
  static Tensor adopt(std::shared_ptr<float> storage, std::vector<int64_t> shape);

  float* data() { return ptr_.get(); }
  const float* data() const { return ptr_.get(); }
  int64_t numel() const { return numel_; }
  int64_t bytes() const { return numel_ * int64_t(sizeof(float)); }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  bool empty() const { return !ptr_; }
  DType dtype() const { return DType::f32; }
  std::string shape_str() const;

 private:
  std::shared_ptr<float> ptr_;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
};

}  // namespace mplan::exec
