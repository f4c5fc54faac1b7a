-- Shipped GPU profile for the cluster preset dgx-h200 (data/clusters/dgx-h200.json).
-- Format: docs/profiles.md. Device ids are local to this file (the importer renumbers them).
-- Every number names its source; nothing here is measured by mplan.

-- The device: peaks, memory, HBM bandwidth and SM count as in the preset (NVIDIA H200 Tensor Core GPU datasheet (SXM): same dense peaks as H100 SXM (sparsity figures are 2x)).
INSERT INTO devices(id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, source, cluster)
VALUES (1, 'gpu', 'H200-SXM-141GB', '', '{"fp32":67,"tf32":494.7,"bf16":989.4,"fp16":989.4,"fp8":1978.9}', 4800, 141, 132, '', '{}', '2025-01-01T00:00:00Z',
        'datasheet values of data/clusters/dgx-h200.json: NVIDIA H200 Tensor Core GPU datasheet (SXM): same dense peaks as H100 SXM (sparsity figures are 2x)', 'dgx-h200');
