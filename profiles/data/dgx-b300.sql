-- Shipped GPU profile for the cluster preset dgx-b300 (data/clusters/dgx-b300.json).
-- Format: docs/profiles.md. Device ids are local to this file (the importer renumbers them).
-- Every number is published by the source named on its row; none is measured by mplan and none is
-- invented. Times are derived from the published rate where the source prints a rate:
--   GEMM:        median_us = 2*M*N*K / (TFLOP/s * 1e6)
--   collectives: median_us = bytes * busbw_factor / (busbw GB/s * 1e3), algbw = busbw / factor
-- p10/p90 are not published: they equal the median. Efficiency parameters of the cost model are
-- fitted to these rows by `mplan calibrate --shipped dgx-b300` (data/calibration/dgx-b300.json).

INSERT INTO devices(id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, source, cluster)
VALUES (1, 'gpu', 'B300-288GB', '', '{"fp32":75,"tf32":1100,"bf16":2250,"fp16":2250,"fp8":4500,"mxfp8":4500,"nvfp4":13500}', 8000, 288, 160, '', '{}', '2025-01-01T00:00:00Z',
        'peaks, memory, HBM bandwidth and SM count as in data/clusters/dgx-b300.json (NVIDIA HGX/DGX B300 (Blackwell Ultra) datasheet: per-GPU sparse peaks halved to dense (FP8 9->4.5, BF16 4.5->2.25, TF32 2.2->1.1 PFLOPS); dense FP4 13.5 PFLOPS; FP32 75 TFLOPS)', 'dgx-b300');

-- No published kernel or collective measurement of this GPU with shapes, sizes and a citable address was found
-- when this file was written (2025): the device row only. `mplan calibrate --shipped dgx-b300` therefore yields the
-- documented defaults, labelled as such. Add rows here (with their source) as measurements are published,
-- or measure with `mplan profile --backend cuda`.
