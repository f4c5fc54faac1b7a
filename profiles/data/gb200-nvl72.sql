-- Shipped GPU profile for the cluster preset gb200-nvl72 (data/clusters/gb200-nvl72.json).
-- Format: docs/profiles.md. Device ids are local to this file (the importer renumbers them).
-- Every number names its source; nothing here is measured by mplan.

-- The device: peaks, memory, HBM bandwidth and SM count as in the preset (NVIDIA GB200 NVL72 datasheet: rack totals / 72 GPUs, sparse figures halved to dense (FP4 1,440->10 per GPU, FP8 720->5, BF16 360->2.5, TF32 180->1.25 PFLOPS); FP32 5,760 TFLOPS / 72 = 80).
INSERT INTO devices(id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, source, cluster)
VALUES (1, 'gpu', 'GB200-B200-186GB', '', '{"fp32":80,"tf32":1250,"bf16":2500,"fp16":2500,"fp8":5000,"mxfp8":5000,"nvfp4":10000}', 8000, 186, 148, '', '{}', '2025-01-01T00:00:00Z',
        'datasheet values of data/clusters/gb200-nvl72.json: NVIDIA GB200 NVL72 datasheet: rack totals / 72 GPUs, sparse figures halved to dense (FP4 1,440->10 per GPU, FP8 720->5, BF16 360->2.5, TF32 180->1.25 PFLOPS); FP32 5,760 TFLOPS / 72 = 80', 'gb200-nvl72');
