-- Shipped GPU profile for the cluster preset dgx-h100 (data/clusters/dgx-h100.json).
-- Format: docs/profiles.md. Device ids are local to this file (the importer renumbers them).
-- Every number is published by the source named on its row; none is measured by mplan and none is
-- invented. Times are derived from the published rate where the source prints a rate:
--   GEMM:        median_us = 2*M*N*K / (TFLOP/s * 1e6)
--   collectives: median_us = bytes * busbw_factor / (busbw GB/s * 1e3), algbw = busbw / factor
-- p10/p90 are not published: they equal the median. Efficiency parameters of the cost model are
-- fitted to these rows by `mplan calibrate --shipped dgx-h100` (data/calibration/dgx-h100.json).

INSERT INTO devices(id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, source, cluster)
VALUES (1, 'gpu', 'H100-SXM5-80GB', '', '{"fp32":67,"tf32":494.7,"bf16":989.4,"fp16":989.4,"fp8":1978.9}', 3350, 80, 132, '', '{}', '2025-01-01T00:00:00Z',
        'peaks, memory, HBM bandwidth and SM count as in data/clusters/dgx-h100.json (NVIDIA H100 Tensor Core GPU datasheet, SXM5 column: dense peaks (sparsity figures are 2x))', 'dgx-h100');

-- GEMMs: published best-shape matmul rates (M x N x K, C(MxN) = A(MxK) B(KxN)). The op name 'gemm' marks a
-- plain GEMM benchmark not tied to a layer.
INSERT INTO kernels(device_id, op, pass, dtype, m, n, k, groups, flops, bytes, reps, median_us, p10_us, p90_us, impl, source) VALUES
  (1, 'gemm', 'fwd', 'bf16', 2048, 2048, 13312, 1, 2.0*2048*2048*13312, 2.0*(2048*13312+13312*2048)+2.0*2048*2048, 100,
   2.0*2048*2048*13312/794.5/1e6, 2.0*2048*2048*13312/794.5/1e6, 2.0*2048*2048*13312/794.5/1e6, 'torch.mm (torch 2.7.0+cu126)', 'Stas Bekman, Machine Learning Engineering Open Book, compute/accelerator/README.md, Maximum Achievable Matmul FLOPS comparison table (mamf-finder.py best shape; mean of 100 iterations after 50 warm-up): https://github.com/stas00/ml-engineering/blob/b9e29720eebd4aa946fa9678975385efbc90a777/compute/accelerator/README.md#maximum-achievable-matmul-flops-comparison-table, NVIDIA H100 SXM row: 794.5 TFLOP/s'),
  (1, 'gemm', 'fwd', 'bf16', 6144, 2816, 17920, 1, 2.0*6144*2816*17920, 2.0*(6144*17920+17920*2816)+2.0*6144*2816, 100,
   2.0*6144*2816*17920/792.1/1e6, 2.0*6144*2816*17920/792.1/1e6, 2.0*6144*2816*17920/792.1/1e6, 'torch.mm (CUDA 12.1)', 'Stas Bekman, Machine Learning Engineering Open Book, compute/accelerator/README.md, Maximum Achievable Matmul FLOPS comparison table (mamf-finder.py best shape; mean of 100 iterations after 50 warm-up): https://github.com/stas00/ml-engineering/blob/b9e29720eebd4aa946fa9678975385efbc90a777/compute/accelerator/README.md#maximum-achievable-matmul-flops-comparison-table, v1 table (no cache reset), NVIDIA H100 SXM row: 792.1 TFLOP/s'),
  (1, 'gemm', 'fwd', 'fp8', 1024, 9216, 14336, 1, 2.0*1024*9216*14336, 1.0*(1024*14336+14336*9216)+2.0*1024*9216, 100,
   2.0*1024*9216*14336/1402.6/1e6, 2.0*1024*9216*14336/1402.6/1e6, 2.0*1024*9216*14336/1402.6/1e6, 'float8_e4m3fn matmul (torch 2.7.0+cu126)', 'Stas Bekman, Machine Learning Engineering Open Book, compute/accelerator/README.md, Maximum Achievable Matmul FLOPS comparison table (mamf-finder.py best shape; mean of 100 iterations after 50 warm-up): https://github.com/stas00/ml-engineering/blob/b9e29720eebd4aa946fa9678975385efbc90a777/compute/accelerator/README.md#maximum-achievable-matmul-flops-comparison-table, FP8 table, NVIDIA H100 SXM row: 1402.6 TFLOP/s');

-- No nccl-tests sweep of a DGX H100 with a citable address was found: collectives keep the documented defaults.
-- Not shipped either: attention and memory-bound kernels.
