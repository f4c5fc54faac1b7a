-- Shipped GPU profile for the cluster preset grand-teton-h100 (data/clusters/grand-teton-h100.json):
-- Meta's Grand Teton hosts with the 96 GB HBM2e H100 at its 500 W default power limit, on which the
-- torchtitan team ran its published benchmarks. Format: docs/profiles.md. Device ids are local to this
-- file (the importer renumbers them).

INSERT INTO devices(id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, source, cluster)
VALUES (1, 'gpu', 'H100-96GB-HBM2e-500W', '', '{"fp32":67,"tf32":494.7,"bf16":989.4,"fp16":989.4,"fp8":1978.9}', 2400, 95, 132, '', '{}', '2025-01-01T00:00:00Z',
        'peaks as the H100 SXM5 datasheet (dense), memory and HBM bandwidth as stated by pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md (96GB HBM2e, 2.4 TB/s, 500 W), as in data/clusters/grand-teton-h100.json', 'grand-teton-h100');

-- No kernel or collective measurement of this part with a citable address was found: the cost model
-- keeps the documented defaults (and the Hopper calibration of the published runs).
