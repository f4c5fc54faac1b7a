// Launch-configuration arithmetic of the CUDA kernels (see launch_config.h).
#include "executor/backend/cuda/launch_config.h"

#include <algorithm>

namespace mplan::exec::gpu {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

Launch1D elementwise_launch(int64_t n) {
  Launch1D l;
  if (n <= 0) return l;
  l.grid = std::min(ceil_div(n, l.block), kMaxGridX);
  return l;
}

RowLaunch warp_per_row_launch(int64_t rows) {
  RowLaunch l;
  if (rows <= 0) return l;
  l.grid = ceil_div(rows, l.rows_per_block);
  return l;
}

BlockRowLaunch block_per_row_launch(int64_t rows, int64_t row_len) {
  BlockRowLaunch l;
  if (rows <= 0) return l;
  l.grid = rows;
  l.block = row_len >= 8192 ? kMaxRowBlock : row_len >= 2048 ? 512 : kBlock;
  return l;
}

ColumnReduceLaunch column_reduce_launch(int64_t M, int64_t N) {
  ColumnReduceLaunch l;
  if (M <= 0 || N <= 0) return l;
  l.grid_x = ceil_div(N, kColTile);
  // enough row ranges to fill a GPU when there are few column tiles, at least 64 rows each
  const int64_t want = std::max<int64_t>(1, 512 / l.grid_x);
  l.chunks = std::clamp<int64_t>(ceil_div(M, 64), 1, std::min<int64_t>(want, kMaxGridYZ));
  l.rows_per_chunk = ceil_div(M, l.chunks);
  l.chunks = ceil_div(M, l.rows_per_chunk);  // no empty trailing chunk
  return l;
}

ReduceLaunch reduce_launch(int64_t n) {
  ReduceLaunch l;
  if (n <= 0) return l;
  l.grid = std::clamp<int64_t>(ceil_div(n, int64_t(l.block) * 8), 1, 1024);
  return l;
}

AttnLaunch attention_launch(AttnKernel k, int64_t B, int64_t Tq, int64_t Tk, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv,
                            int64_t max_smem_bytes) {
  AttnLaunch l;
  if (B <= 0 || Tq <= 0 || Tk <= 0 || Hq <= 0 || Hkv <= 0 || D <= 0 || Dv <= 0) {
    l.error = "empty attention shape";
    return l;
  }
  if (Hq % Hkv != 0) {
    l.error = "query heads (" + std::to_string(Hq) + ") must be a multiple of key/value heads (" + std::to_string(Hkv) + ")";
    return l;
  }
  const int64_t dmax = std::max(D, Dv);
  if (dmax > 8 * kWarp) {
    l.error = "head dimension " + std::to_string(dmax) + " > 256 is not supported by the CUDA attention kernel";
    return l;
  }
  l.dim_chunks = dmax <= 4 * kWarp ? 4 : 8;
  const int64_t BQ = kAttnBQ, BK = kAttnBK;
  int64_t floats = 0;
  switch (k) {
    case AttnKernel::forward:  // Q, K (rows padded by one float), V
      l.grid_x = ceil_div(Tq, BQ), l.grid_y = Hq;
      floats = BQ * D + BK * (D + 1) + BK * Dv;
      break;
    case AttnKernel::backward_dq:  // Q, dO, K (padded), V (padded)
      l.grid_x = ceil_div(Tq, BQ), l.grid_y = Hq;
      floats = BQ * D + BQ * Dv + BK * (D + 1) + BK * (Dv + 1);
      break;
    case AttnKernel::backward_dkv:  // Q (padded), dO (padded), K, V
      l.grid_x = ceil_div(Tk, BK), l.grid_y = Hkv;
      floats = BQ * (D + 1) + BQ * (Dv + 1) + BK * D + BK * Dv;
      break;
  }
  l.grid_z = B;
  l.smem_bytes = floats * int64_t(sizeof(float));
  if (l.grid_y > kMaxGridYZ || l.grid_z > kMaxGridYZ || l.grid_x > (int64_t(1) << 31) - 1) {
    l.error = "attention grid too large (heads or batch > 65535)";
    return l;
  }
  if (max_smem_bytes > 0 && l.smem_bytes > max_smem_bytes) {
    l.error = "attention tile needs " + std::to_string(l.smem_bytes) + " B of shared memory; the device allows " +
              std::to_string(max_smem_bytes) + " B of dynamic shared memory per block (head dims " + std::to_string(D) + "/" +
              std::to_string(Dv) + ")";
    return l;
  }
  l.ok = true;
  return l;
}

int pointer_alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int al = 256;
  while (al > 1 && a % uintptr_t(al) != 0) al /= 2;
  return al;
}

}  // namespace mplan::exec::gpu
