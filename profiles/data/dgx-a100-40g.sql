-- Shipped GPU profile for the cluster preset dgx-a100-40g (data/clusters/dgx-a100-40g.json).
-- Format: docs/profiles.md. Device ids are local to this file (the importer renumbers them).
-- Every number is published by the source named on its row; none is measured by mplan and none is
-- invented. Times are derived from the published rate where the source prints a rate:
--   GEMM:        median_us = 2*M*N*K / (TFLOP/s * 1e6)
--   collectives: median_us = bytes * busbw_factor / (busbw GB/s * 1e3), algbw = busbw / factor
-- p10/p90 are not published: they equal the median. Efficiency parameters of the cost model are
-- fitted to these rows by `mplan calibrate --shipped dgx-a100-40g` (data/calibration/dgx-a100-40g.json).

INSERT INTO devices(id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, source, cluster)
VALUES (1, 'gpu', 'A100-SXM4-40GB', '', '{"fp32":19.5,"tf32":156,"bf16":312,"fp16":312}', 1555, 40, 108, '', '{}', '2025-01-01T00:00:00Z',
        'peaks, memory, HBM bandwidth and SM count as in data/clusters/dgx-a100-40g.json (NVIDIA A100 Tensor Core GPU datasheet (2021): dense tensor-core peaks (the datasheet''s sparsity figures are 2x))', 'dgx-a100-40g');

-- The MAMF table names 'NVIDIA A100 SXM' without the memory size; the 40 GB and 80 GB SXM4 parts have the same
-- tensor-core clocks and NVLink 3, so the rows apply to both presets.
-- GEMMs: published best-shape matmul rates (M x N x K, C(MxN) = A(MxK) B(KxN)). The op name 'gemm' marks a
-- plain GEMM benchmark not tied to a layer.
INSERT INTO kernels(device_id, op, pass, dtype, m, n, k, groups, flops, bytes, reps, median_us, p10_us, p90_us, impl, source) VALUES
  (1, 'gemm', 'fwd', 'bf16', 1024, 10240, 5120, 1, 2.0*1024*10240*5120, 2.0*(1024*5120+5120*10240)+2.0*1024*10240, 100,
   2.0*1024*10240*5120/271.2/1e6, 2.0*1024*10240*5120/271.2/1e6, 2.0*1024*10240*5120/271.2/1e6, 'torch.mm (torch 2.6.0+cu126)', 'Stas Bekman, Machine Learning Engineering Open Book, compute/accelerator/README.md, Maximum Achievable Matmul FLOPS comparison table (mamf-finder.py best shape; mean of 100 iterations after 50 warm-up): https://github.com/stas00/ml-engineering/blob/b9e29720eebd4aa946fa9678975385efbc90a777/compute/accelerator/README.md#maximum-achievable-matmul-flops-comparison-table, NVIDIA A100 SXM row: 271.2 TFLOP/s'),
  (1, 'gemm', 'fwd', 'bf16', 6912, 2048, 16384, 1, 2.0*6912*2048*16384, 2.0*(6912*16384+16384*2048)+2.0*6912*2048, 100,
   2.0*6912*2048*16384/267.9/1e6, 2.0*6912*2048*16384/267.9/1e6, 2.0*6912*2048*16384/267.9/1e6, 'torch.mm (CUDA 12.1)', 'Stas Bekman, Machine Learning Engineering Open Book, compute/accelerator/README.md, Maximum Achievable Matmul FLOPS comparison table (mamf-finder.py best shape; mean of 100 iterations after 50 warm-up): https://github.com/stas00/ml-engineering/blob/b9e29720eebd4aa946fa9678975385efbc90a777/compute/accelerator/README.md#maximum-achievable-matmul-flops-comparison-table, v1 table (no cache reset), NVIDIA A100 SXM row: 267.9 TFLOP/s');

-- send/recv: nccl-tests prints the time; busbw = algbw for send/recv. The memory size of those A100s is not stated.
INSERT INTO collectives(device_id, op, group_size, members_per_node, domains, bytes, dtype, reps, median_us, p10_us, p90_us, algbw_gbps, busbw_gbps, transport, impl, source) VALUES
  (1, 'send_recv', 8, 8, 1, 134217728, 'fp32', 20, 1211.2, 1211.2, 1211.2, 110.81, 110.81, 'nvlink', 'nccl-tests sendrecv_perf', 'li-plus/playground cuda/nccl.md, nccl-tests sendrecv_perf -g 8 on 8 A100 NVLink GPUs (out-of-place column): https://github.com/li-plus/playground/blob/b85070fb449ea55858fed14cf69cefe10592261b/cuda/nccl.md (128 MiB)'),
  (1, 'send_recv', 8, 8, 1, 268435456, 'fp32', 20, 1423.3, 1423.3, 1423.3, 188.6, 188.6, 'nvlink', 'nccl-tests sendrecv_perf', 'li-plus/playground cuda/nccl.md, nccl-tests sendrecv_perf -g 8 on 8 A100 NVLink GPUs (out-of-place column): https://github.com/li-plus/playground/blob/b85070fb449ea55858fed14cf69cefe10592261b/cuda/nccl.md (256 MiB)'),
  (1, 'send_recv', 8, 8, 1, 536870912, 'fp32', 20, 2785.4, 2785.4, 2785.4, 192.75, 192.75, 'nvlink', 'nccl-tests sendrecv_perf', 'li-plus/playground cuda/nccl.md, nccl-tests sendrecv_perf -g 8 on 8 A100 NVLink GPUs (out-of-place column): https://github.com/li-plus/playground/blob/b85070fb449ea55858fed14cf69cefe10592261b/cuda/nccl.md (512 MiB)'),
  (1, 'send_recv', 8, 8, 1, 1073741824, 'fp32', 20, 5503.4, 5503.4, 5503.4, 195.1, 195.1, 'nvlink', 'nccl-tests sendrecv_perf', 'li-plus/playground cuda/nccl.md, nccl-tests sendrecv_perf -g 8 on 8 A100 NVLink GPUs (out-of-place column): https://github.com/li-plus/playground/blob/b85070fb449ea55858fed14cf69cefe10592261b/cuda/nccl.md (1 GiB)');

-- Not published with shapes or sizes here (so not shipped): attention kernels, memory-bound kernels, all-reduce
-- sweeps, multi-node collectives. Their parameters keep the documented defaults.
