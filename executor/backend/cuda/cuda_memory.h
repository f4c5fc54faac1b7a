// Device memory of the CUDA backend: a caching allocator over CUDA managed memory
// (cudaMallocManaged, preferred location = the GPU). Managed rather than plain device memory
// because the executor's layers are host-driven (they read losses, router choices and MoE counts,
// write small per-row tensors, and checkpoint parameters through Tensor::data()); the pages live on
// the GPU and migrate only for those host touches. Small blocks (<= 1 MiB) come from 2 MiB slabs by
// power-of-two size class; large blocks are whole managed allocations cached by size. Freed blocks
// are reused at once: the backend synchronises its stream at the end of every op.
// `SizeClasses` is the pure arithmetic of the bins (unit-tested without a device).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace mplan::exec::gpu {

struct SizeClasses {
  static constexpr int64_t kMinBlock = 256;               // bytes; also the alignment of every block
  static constexpr int64_t kSmallMax = int64_t(1) << 20;  // <= this: slab-allocated
  static constexpr int64_t kSlab = int64_t(2) << 20;
  static constexpr int64_t kLargeRound = int64_t(2) << 20;
  // bin of a small request (0 = 256 B, 1 = 512 B, ... 12 = 1 MiB); -1 for large requests
  static int small_bin(int64_t bytes);
  static int64_t bin_bytes(int bin) { return kMinBlock << bin; }
  // bytes actually reserved for a request
  static int64_t rounded(int64_t bytes);
  // a cached large block of `have` bytes may serve a request of `want` rounded bytes
  static bool large_fits(int64_t have, int64_t want) { return have >= want && have <= want + want / 4; }
};

class ManagedPool {
 public:
  explicit ManagedPool(int device) : device_(device) {}
  ~ManagedPool();
  ManagedPool(const ManagedPool&) = delete;
  ManagedPool& operator=(const ManagedPool&) = delete;

  void* allocate(int64_t bytes);  // not zeroed; aborts with a message when the device is out of memory
  void release(void* p);
  int64_t reserved_bytes() const { return reserved_; }
  int64_t peak_reserved_bytes() const { return peak_reserved_; }
  void empty_cache();  // frees cached large blocks (slabs stay)

 private:
  void* managed_alloc(int64_t bytes);
  int device_;
  std::mutex mu_;
  std::vector<std::vector<void*>> small_free_ = std::vector<std::vector<void*>>(13);
  std::vector<void*> slabs_;
  std::multimap<int64_t, void*> large_free_;
  std::map<void*, int64_t> large_size_;  // live and cached large blocks
  std::map<void*, int> small_bin_;       // live small blocks -> bin
  int64_t reserved_ = 0, peak_reserved_ = 0;
};

}  // namespace mplan::exec::gpu
