-- Shipped GPU profile for the cluster preset dgx-b200 (data/clusters/dgx-b200.json).
-- Format: docs/profiles.md. Device ids are local to this file (the importer renumbers them).
-- Every number names its source; nothing here is measured by mplan.

-- The device: peaks, memory, HBM bandwidth and SM count as in the preset (NVIDIA DGX B200 / HGX B200 datasheet: per-GPU sparse peaks halved to dense (FP4 18->9, FP8 9->4.5, BF16/FP16 4.5->2.25, TF32 2.2->1.1 PFLOPS); FP32 75 TFLOPS).
INSERT INTO devices(id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, source, cluster)
VALUES (1, 'gpu', 'B200-180GB', '', '{"fp32":75,"tf32":1100,"bf16":2250,"fp16":2250,"fp8":4500,"mxfp8":4500,"nvfp4":9000}', 8000, 180, 148, '', '{}', '2025-01-01T00:00:00Z',
        'datasheet values of data/clusters/dgx-b200.json: NVIDIA DGX B200 / HGX B200 datasheet: per-GPU sparse peaks halved to dense (FP4 18->9, FP8 9->4.5, BF16/FP16 4.5->2.25, TF32 2.2->1.1 PFLOPS); FP32 75 TFLOPS', 'dgx-b200');
