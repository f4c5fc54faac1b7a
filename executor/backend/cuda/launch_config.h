// Launch configurations of the CUDA backend's kernels: plain host arithmetic (no CUDA headers), so
// the grid/block/shared-memory choices and their limits are unit-tested on machines without a GPU.
// The kernels in cuda_kernels.cu / cuda_attention.cu are written against exactly these numbers.
#pragma once
#include <cstdint>
#include <string>

namespace mplan::exec::gpu {

constexpr int kWarp = 32;
constexpr int kBlock = 256;            // threads of every 1-D kernel
constexpr int64_t kMaxGridX = 65536;   // grid-stride loops cover the rest
constexpr int64_t kMaxGridYZ = 65535;  // hardware limit of gridDim.y and gridDim.z

// Element-wise kernels: grid-stride loop over n elements.
struct Launch1D {
  int64_t grid = 0;  // 0 = nothing to launch
  int block = kBlock;
};
Launch1D elementwise_launch(int64_t n);

// One warp per row (norms, row dots, router, attention delta): 8 rows per block of 256.
struct RowLaunch {
  int64_t grid = 0;
  int block = kBlock;
  int rows_per_block = kBlock / kWarp;
};
RowLaunch warp_per_row_launch(int64_t rows);

// One block per row (cross-entropy rows of a vocabulary shard): wider blocks for long rows, at most
// kMaxRowBlock threads (the kernels' __launch_bounds__).
constexpr int kMaxRowBlock = 1024;
struct BlockRowLaunch {
  int64_t grid = 0;
  int block = kBlock;
};
BlockRowLaunch block_per_row_launch(int64_t rows, int64_t row_len);

// Column sums of an (M, N) matrix, deterministic: blocks of (32 columns x 8 row lanes) sum `chunks`
// contiguous row ranges of `rows_per_chunk` rows into a (chunks, N) scratch, then one thread per
// column adds the chunks in order. Used for bias, norm-weight and embedding-free column gradients.
struct ColumnReduceLaunch {
  int64_t grid_x = 0;  // column tiles of 32
  int64_t chunks = 0;  // grid_y: row ranges
  int64_t rows_per_chunk = 0;
  int64_t scratch_elems() const { return chunks * grid_x * kWarp; }
};
constexpr int kColTile = 32, kColRowLanes = 8;
ColumnReduceLaunch column_reduce_launch(int64_t M, int64_t N);

// Full reductions to a double (sum of squares, non-finite count): fixed partial count, then one
// block adds them in order (deterministic; no atomics).
struct ReduceLaunch {
  int64_t grid = 0;  // partials
  int block = kBlock;
};
ReduceLaunch reduce_launch(int64_t n);

// Flash attention tiles: 32 queries x 32 keys per step, 256 threads (8 warps x 4 rows each); the
// per-thread accumulators hold head dims in chunks of 32 (4 chunks up to 128, 8 up to 256).
constexpr int kAttnBQ = 32, kAttnBK = 32, kAttnThreads = 256;
enum class AttnKernel { forward, backward_dq, backward_dkv };
struct AttnLaunch {
  bool ok = false;
  std::string error;  // why not (head dim too large, grid too large, shared memory)
  int64_t grid_x = 0, grid_y = 0, grid_z = 0;
  int dim_chunks = 0;      // 4 or 8: accumulators per thread and row = dim_chunks
  int64_t smem_bytes = 0;  // dynamic shared memory
};
// B, Tq, Tk, Hq, Hkv, D, Dv as in Backend::AttnShape; max_smem = the dynamic shared memory a kernel
// may use: attention_dynamic_smem_limit(the device's opt-in limit per block, its static shared memory).
AttnLaunch attention_launch(AttnKernel k, int64_t B, int64_t Tq, int64_t Tk, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv,
                            int64_t max_smem_bytes);

// The opt-in limit (cudaDevAttrMaxSharedMemoryPerBlockOptin) bounds static + dynamic shared memory of
// one block, so the largest dynamic request (cudaFuncAttributeMaxDynamicSharedMemorySize) of a kernel
// with `static_bytes` of __shared__ arrays is the difference (0 when nothing is left).
inline int64_t attention_dynamic_smem_limit(int64_t optin_bytes, int64_t static_bytes) {
  return optin_bytes > static_bytes ? optin_bytes - static_bytes : 0;
}

// Bytes aligned up (allocator granularity, cuBLASLt alignment).
inline int64_t align_up(int64_t n, int64_t a) { return (n + a - 1) / a * a; }
// Largest power of two (<= 256) dividing the address: cuBLASLt needs the true operand alignment.
int pointer_alignment(const void* p);

}  // namespace mplan::exec::gpu
