// Caching allocator over CUDA managed memory (see cuda_memory.h).
#include "executor/backend/cuda/cuda_memory.h"

#include <cuda_runtime.h>

#include <string>

#include "executor/backend/cuda/cuda_check.h"
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

ManagedPool::~ManagedPool() {
  // Tensors outliving the backend keep their blocks (process exit reclaims them); cached and slab
  // memory is returned here.
  for (auto& [size, p] : large_free_) cudaFree(p);
  for (void* s : slabs_) cudaFree(s);
}

void* ManagedPool::managed_alloc(int64_t bytes) {
  void* p = nullptr;
  cudaError_t e = cudaMallocManaged(&p, size_t(bytes), cudaMemAttachGlobal);
  if (e == cudaErrorMemoryAllocation) {  // give cached blocks back and retry once
    (void)cudaGetLastError();
    for (auto& [size, q] : large_free_) {
      cudaFree(q);
      large_size_.erase(q);
      reserved_ -= size;
    }
    large_free_.clear();
    e = cudaMallocManaged(&p, size_t(bytes), cudaMemAttachGlobal);
  }
  if (e != cudaSuccess) {
    const std::string what =
        "cudaMallocManaged(" + std::to_string(bytes) + " bytes; " + std::to_string(reserved_) + " bytes already reserved)";
    fatal_error(what.c_str(), cudaGetErrorString(e), __FILE__, __LINE__);
  }
  // keep the pages on the GPU; the host maps them when it touches them
  cudaMemLocation loc{};
  loc.type = cudaMemLocationTypeDevice;
  loc.id = device_;
  MPLAN_CUDA_CHECK(cudaMemAdvise(p, size_t(bytes), cudaMemAdviseSetPreferredLocation, loc));
  reserved_ += bytes;
  if (reserved_ > peak_reserved_) peak_reserved_ = reserved_;
  return p;
}

void* ManagedPool::allocate(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const int bin = SizeClasses::small_bin(bytes);
  if (bin >= 0) {
    auto& fl = small_free_[size_t(bin)];
    if (fl.empty()) {  // carve a new slab into blocks of this bin
      auto* slab = static_cast<char*>(managed_alloc(SizeClasses::kSlab));
      slabs_.push_back(slab);
      const int64_t bb = SizeClasses::bin_bytes(bin);
      for (int64_t off = SizeClasses::kSlab - bb; off >= 0; off -= bb) fl.push_back(slab + off);
    }
    void* p = fl.back();
    fl.pop_back();
    small_bin_[p] = bin;
    return p;
  }
  const int64_t want = SizeClasses::rounded(bytes);
  auto it = large_free_.lower_bound(want);
  if (it != large_free_.end() && SizeClasses::large_fits(it->first, want)) {
    void* p = it->second;
    large_free_.erase(it);
    return p;
  }
  void* p = managed_alloc(want);
  large_size_[p] = want;
  return p;
}

void ManagedPool::release(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto s = small_bin_.find(p);
  if (s != small_bin_.end()) {
    small_free_[size_t(s->second)].push_back(p);
    small_bin_.erase(s);
    return;
  }
  auto l = large_size_.find(p);
  if (l != large_size_.end()) large_free_.emplace(l->second, p);
}

void ManagedPool::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [size, p] : large_free_) {
    cudaFree(p);
    large_size_.erase(p);
    reserved_ -= size;
  }
  large_free_.clear();
}

}  // namespace mplan::exec::gpu
