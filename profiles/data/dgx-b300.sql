-- Shipped GPU profile for the cluster preset dgx-b300 (data/clusters/dgx-b300.json).
-- Format: docs/profiles.md. Device ids are local to this file (the importer renumbers them).
-- Every number names its source; nothing here is measured by mplan.

-- The device: peaks, memory, HBM bandwidth and SM count as in the preset (NVIDIA HGX/DGX B300 (Blackwell Ultra) datasheet: per-GPU sparse peaks halved to dense (FP8 9->4.5, BF16 4.5->2.25, TF32 2.2->1.1 PFLOPS); dense FP4 13.5 PFLOPS; FP32 75 TFLOPS).
INSERT INTO devices(id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, source, cluster)
VALUES (1, 'gpu', 'B300-288GB', '', '{"fp32":75,"tf32":1100,"bf16":2250,"fp16":2250,"fp8":4500,"mxfp8":4500,"nvfp4":13500}', 8000, 288, 160, '', '{}', '2025-01-01T00:00:00Z',
        'datasheet values of data/clusters/dgx-b300.json: NVIDIA HGX/DGX B300 (Blackwell Ultra) datasheet: per-GPU sparse peaks halved to dense (FP8 9->4.5, BF16 4.5->2.25, TF32 2.2->1.1 PFLOPS); dense FP4 13.5 PFLOPS; FP32 75 TFLOPS', 'dgx-b300');
