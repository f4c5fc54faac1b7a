-- Shipped GPU profile for the cluster preset gb300-nvl72 (data/clusters/gb300-nvl72.json).
-- Format: docs/profiles.md. Device ids are local to this file (the importer renumbers them).
-- Every number names its source; nothing here is measured by mplan.

-- The device: peaks, memory, HBM bandwidth and SM count as in the preset (NVIDIA GB300 NVL72 datasheet: rack totals / 72 GPUs (FP4 dense 1,080 -> 15 per GPU; FP8 720 sparse -> 5 dense; BF16 360 sparse -> 2.5 dense; TF32 180 sparse -> 1.25 dense PFLOPS); FP32 ~80 TFLOPS).
INSERT INTO devices(id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, source, cluster)
VALUES (1, 'gpu', 'GB300-B300-288GB', '', '{"fp32":80,"tf32":1250,"bf16":2500,"fp16":2500,"fp8":5000,"mxfp8":5000,"nvfp4":15000}', 8000, 288, 160, '', '{}', '2025-01-01T00:00:00Z',
        'datasheet values of data/clusters/gb300-nvl72.json: NVIDIA GB300 NVL72 datasheet: rack totals / 72 GPUs (FP4 dense 1,080 -> 15 per GPU; FP8 720 sparse -> 5 dense; BF16 360 sparse -> 2.5 dense; TF32 180 sparse -> 1.25 dense PFLOPS); FP32 ~80 TFLOPS', 'gb300-nvl72');
