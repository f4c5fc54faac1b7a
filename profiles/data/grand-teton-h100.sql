-- Shipped GPU profile for the cluster preset grand-teton-h100 (data/clusters/grand-teton-h100.json):
-- Meta's Grand Teton hosts with the 96 GB HBM2e H100 at its 500 W default power limit (sustained peaks: the datasheet x 0.915, see data/clusters/grand-teton-h100.json), on which the
-- torchtitan team ran its published benchmarks. Format: docs/profiles.md. Device ids are local to this
-- file (the importer renumbers them).

INSERT INTO devices(id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, source, cluster)
VALUES (1, 'gpu', 'H100-96GB-HBM2e-500W', '', '{"fp32":61.3,"tf32":452.7,"bf16":905.3,"fp16":905.3,"fp8":1810.7}', 2400, 95, 132, '', '{}', '2025-01-01T00:00:00Z',
        'peaks as the H100 SXM5 datasheet (dense) x 0.915, the measured LLM pre-training throughput of H100 at a 500 W vs a 700 W cap (Mayr et al., arXiv:2603.16164, Table 4), memory and HBM bandwidth as stated by pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md (96GB HBM2e, 2.4 TB/s, 500 W), as in data/clusters/grand-teton-h100.json', 'grand-teton-h100');

-- No kernel or collective measurement of this part with a citable address was found: the cost model
-- keeps the documented defaults (and the Hopper calibration of the published runs).
