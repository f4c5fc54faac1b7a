-- Shipped GPU profile for the cluster preset gb200-nvl72 (data/clusters/gb200-nvl72.json).
-- Format: docs/profiles.md. Device ids are local to this file (the importer renumbers them).
-- Every number is published by the source named on its row; none is measured by mplan and none is
-- invented. Times are derived from the published rate where the source prints a rate:
--   GEMM:        median_us = 2*M*N*K / (TFLOP/s * 1e6)
--   collectives: median_us = bytes * busbw_factor / (busbw GB/s * 1e3), algbw = busbw / factor
-- p10/p90 are not published: they equal the median. Efficiency parameters of the cost model are
-- fitted to these rows by `mplan calibrate --shipped gb200-nvl72` (data/calibration/gb200-nvl72.json).

INSERT INTO devices(id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, source, cluster)
VALUES (1, 'gpu', 'GB200-B200-186GB', '', '{"fp32":80,"tf32":1250,"bf16":2500,"fp16":2500,"fp8":5000,"mxfp8":5000,"nvfp4":10000}', 8000, 186, 148, '', '{}', '2025-01-01T00:00:00Z',
        'peaks, memory, HBM bandwidth and SM count as in data/clusters/gb200-nvl72.json (NVIDIA GB200 NVL72 datasheet: rack totals / 72 GPUs, sparse figures halved to dense (FP4 1,440->10 per GPU, FP8 720->5, BF16 360->2.5, TF32 180->1.25 PFLOPS); FP32 5,760 TFLOPS / 72 = 80)', 'gb200-nvl72');

-- No published kernel or collective measurement of this GPU with shapes, sizes and a citable address was found
-- when this file was written (2025): the device row only. `mplan calibrate --shipped gb200-nvl72` therefore yields the
-- documented defaults, labelled as such. Add rows here (with their source) as measurements are published,
-- or measure with `mplan profile --backend cuda`.
