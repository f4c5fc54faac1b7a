// Caching pool over plain device memory (see cuda_memory.h).
#include "executor/backend/cuda/cuda_memory.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <tuple>

#include "executor/backend/cuda/launch_config.h"

namespace mplan::exec::gpu {

int SizeClasses::small_bin(int64_t bytes) {
  if (bytes > kSmallMax) return -1;
  int bin = 0;
  while (bin_bytes(bin) < bytes) ++bin;
  return bin;
}

int64_t SizeClasses::rounded(int64_t bytes) {
  const int bin = small_bin(bytes);
  return bin >= 0 ? bin_bytes(bin) : align_up(bytes, kLargeRound);
}

namespace {

class CudaDeviceAllocator final : public DeviceAllocator {
 public:
  explicit CudaDeviceAllocator(int device) : device_(device) {}
  void* allocate(int64_t bytes) override {
    void* p = nullptr;
    if (cudaSetDevice(device_) != cudaSuccess || cudaMalloc(&p, size_t(bytes)) != cudaSuccess) {
      (void)cudaGetLastError();  // an out-of-memory error is not sticky; clear it
      return nullptr;
    }
    return p;
  }
  void free(void* p) override { cudaFree(p); }
  std::pair<int64_t, int64_t> device_memory() override {
    size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) (void)cudaGetLastError();
    return {int64_t(f), int64_t(t)};
  }

 private:
  int device_;
};

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(int64_t(1) << 30));
  return buf;
}

}  // namespace

std::unique_ptr<DeviceAllocator> make_cuda_device_allocator(int device) { return std::make_unique<CudaDeviceAllocator>(device); }

std::string out_of_memory_message(const OutOfMemory& o, int64_t predicted) {
  std::string m = "out of GPU memory: allocating " + gib(o.request) + " with " + gib(o.allocated) + " in use (" +
                  gib(o.reserved) + " held by mplan); the device has " + gib(o.device_free) + " free of " + gib(o.device_total) +
                  "; the plan predicts ";
  m += predicted > 0 ? gib(predicted) + " per GPU" : "an unknown peak (simulate the plan for its memory)";
  m += ". Choose a layout that fits (more tp/pp, ZeRO, recompute, a smaller micro-batch) or free the GPU";
  return m;
}

DevicePool::DevicePool(std::unique_ptr<DeviceAllocator> raw, std::function<void(const OutOfMemory&)> on_oom)
    : raw_(std::move(raw)), on_oom_(std::move(on_oom)) {}

DevicePool::~DevicePool() {
  // Tensors outliving the backend keep their blocks (process exit reclaims them); cached and slab
  // memory is returned here.
  for (auto& [size, p] : large_free_) raw_->free(p);
  for (void* s : slabs_) raw_->free(s);
}

void DevicePool::drop_cache_locked() {
  for (auto& [size, q] : large_free_) {
    raw_->free(q);
    large_size_.erase(q);
    reserved_ -= size;
  }
  large_free_.clear();
}

void* DevicePool::raw_alloc(int64_t bytes) {
  void* p = raw_->allocate(bytes);
  if (!p) {  // give cached blocks back and retry once
    drop_cache_locked();
    p = raw_->allocate(bytes);
  }
  if (!p) {
    OutOfMemory o;
    o.request = bytes;
    o.allocated = allocated_;
    o.reserved = reserved_;
    std::tie(o.device_free, o.device_total) = raw_->device_memory();
    on_oom_(o);
    std::abort();  // on_oom must not return
  }
  reserved_ += bytes;
  if (reserved_ > peak_reserved_) peak_reserved_ = reserved_;
  return p;
}

void* DevicePool::allocate(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const int bin = SizeClasses::small_bin(bytes);
  void* p = nullptr;
  if (bin >= 0) {
    auto& fl = small_free_[size_t(bin)];
    if (fl.empty()) {  // carve a new slab into blocks of this bin
      auto* slab = static_cast<char*>(raw_alloc(SizeClasses::kSlab));
      slabs_.push_back(slab);
      const int64_t bb = SizeClasses::bin_bytes(bin);
      for (int64_t off = SizeClasses::kSlab - bb; off >= 0; off -= bb) fl.push_back(slab + off);
    }
    p = fl.back();
    fl.pop_back();
    small_bin_[p] = bin;
    allocated_ += SizeClasses::bin_bytes(bin);
  } else {
    const int64_t want = SizeClasses::rounded(bytes);
    auto it = large_free_.lower_bound(want);
    if (it != large_free_.end() && SizeClasses::large_fits(it->first, want)) {
      p = it->second;
      allocated_ += it->first;
      large_free_.erase(it);
    } else {
      p = raw_alloc(want);
      large_size_[p] = want;
      allocated_ += want;
    }
  }
  if (allocated_ > peak_allocated_) peak_allocated_ = allocated_;
  return p;
}

void DevicePool::release(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto s = small_bin_.find(p);
  if (s != small_bin_.end()) {
    small_free_[size_t(s->second)].push_back(p);
    allocated_ -= SizeClasses::bin_bytes(s->second);
    small_bin_.erase(s);
    return;
  }
  auto l = large_size_.find(p);
  if (l != large_size_.end()) {
    large_free_.emplace(l->second, p);
    allocated_ -= l->second;
  }
}

void DevicePool::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  drop_cache_locked();
}

}  // namespace mplan::exec::gpu
