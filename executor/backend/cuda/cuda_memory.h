// Device memory of the CUDA backend: a caching pool over plain device memory (cudaMalloc; never
// managed memory, which can hang these GPU machines). Small blocks (<= 1 MiB) come from 2 MiB slabs
// by power-of-two size class; large blocks are whole device allocations cached by size. Reuse is
// stream-ordered: the backend enqueues all its work on one compute stream and the NCCL
// communicator synchronises its own stream before a collective returns, so a block released on the
// host may be handed out again at once (the next user's work runs after the last user's on the
// stream). Every device allocation of the backend goes through the pool (tensors, scratch,
// workspaces, bf16 copies), so `peak_allocated_bytes` is the executor's whole device footprint.
// The raw allocator is injectable: the unit tests run the bookkeeping on host memory.
// `SizeClasses` is the pure arithmetic of the bins.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
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

// Raw device memory behind the pool.
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  virtual void* allocate(int64_t bytes) = 0;  // nullptr when the device has no room
  virtual void free(void* p) = 0;
  // what the device reports (free, total) in bytes, for the out-of-memory message
  virtual std::pair<int64_t, int64_t> device_memory() = 0;
};

// cudaMalloc / cudaFree on one device.
std::unique_ptr<DeviceAllocator> make_cuda_device_allocator(int device);

struct OutOfMemory {
  int64_t request = 0;    // bytes asked for (rounded)
  int64_t allocated = 0;  // bytes the pool had handed out
  int64_t reserved = 0;   // bytes the pool held from the device (after giving its cache back)
  int64_t device_free = 0, device_total = 0;
};
// Message of an out-of-memory failure; `predicted` = the plan's predicted peak per GPU (0: unknown).
std::string out_of_memory_message(const OutOfMemory& o, int64_t predicted);

class DevicePool {
 public:
  // `on_oom` is called when the device cannot serve a request even after the cache is returned;
  // it must not return (the backend prints the message and ends the job with exit code 2).
  DevicePool(std::unique_ptr<DeviceAllocator> raw, std::function<void(const OutOfMemory&)> on_oom);
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  void* allocate(int64_t bytes);  // not zeroed; 256-byte aligned
  void release(void* p);
  int64_t allocated_bytes() const { return allocated_; }  // blocks handed out (rounded sizes)
  int64_t peak_allocated_bytes() const { return peak_allocated_; }
  int64_t reserved_bytes() const { return reserved_; }  // held from the device (cache and slabs included)
  int64_t peak_reserved_bytes() const { return peak_reserved_; }
  void reset_peak() { peak_allocated_ = allocated_; }
  void empty_cache();  // returns cached large blocks to the device (slabs stay)

 private:
  void* raw_alloc(int64_t bytes);
  void drop_cache_locked();
  std::unique_ptr<DeviceAllocator> raw_;
  std::function<void(const OutOfMemory&)> on_oom_;
  std::mutex mu_;
  std::vector<std::vector<void*>> small_free_ = std::vector<std::vector<void*>>(13);
  std::vector<void*> slabs_;
  std::multimap<int64_t, void*> large_free_;
  std::map<void*, int64_t> large_size_;  // live and cached large blocks
  std::map<void*, int> small_bin_;       // live small blocks -> bin
  int64_t allocated_ = 0, peak_allocated_ = 0, reserved_ = 0, peak_reserved_ = 0;
};

}  // namespace mplan::exec::gpu
