-- Shipped GPU profile for the cluster preset dgx-a100-40g (data/clusters/dgx-a100-40g.json).
-- Format: docs/profiles.md. Device ids are local to this file (the importer renumbers them).
-- Every number names its source; nothing here is measured by mplan.

-- The device: peaks, memory, HBM bandwidth and SM count as in the preset (NVIDIA A100 Tensor Core GPU datasheet (2021): dense tensor-core peaks (the datasheet's sparsity figures are 2x)).
INSERT INTO devices(id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, source, cluster)
VALUES (1, 'gpu', 'A100-SXM4-40GB', '', '{"fp32":19.5,"tf32":156,"bf16":312,"fp16":312}', 1555, 40, 108, '', '{}', '2025-01-01T00:00:00Z',
        'datasheet values of data/clusters/dgx-a100-40g.json: NVIDIA A100 Tensor Core GPU datasheet (2021): dense tensor-core peaks (the datasheet''s sparsity figures are 2x)', 'dgx-a100-40g');
