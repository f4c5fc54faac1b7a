// The cost model's parameters: few, physical, fitted by `mplan calibrate` (profiles/) or taken from
// the documented defaults per GPU. Serialised as "mplan.calibration/1" JSON, which
// `mplan simulate/search --calibration FILE` load.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "core/cluster_spec.h"
#include "core/framework.h"
#include "core/precision.h"
#include "core/status.h"

namespace mplan {

constexpr const char* kCalibrationSchema = "mplan.calibration/1";

struct CostParams {
  // --- compute ---
  // GEMM time = W / (peak(p) * eff), eff = gemm_eff_max * precision_eff[p] * W / (padded + gemm_ramp_us
  // * 1e-6 * peak(p)): W = 2mnk; padded = W in whole output tiles on every SM of every wave (tile and
  // wave quantization; the least wasteful of gemm_tile_m x gemm_tile_n, transposed and halved; padded = W
  // on a CPU). The ramp is a fixed time per GEMM kernel (pipeline fill and drain, the epilogue, the
  // launch), the same on every GPU and precision: a GEMM is at half its maximum efficiency where its
  // work at the full rate takes that long. See gemm_efficiency in compute_cost.cpp.
  double gemm_eff_max = 0.80;
  double gemm_ramp_us = 2.0;
  int gemm_tile_m = 128;
  int gemm_tile_n = 256;
  std::map<Precision, double> precision_eff;  // multiplier on gemm_eff_max (missing = 1)
  // Multiplier for the grouped GEMMs of MoE experts (many small per-expert GEMMs in one kernel).
  double grouped_gemm_eff = 1.0;
  // Flash attention: achieved fraction of the dense peak, forward and backward.
  double attn_fwd_eff = 0.60;
  double attn_bwd_eff = 0.45;
  // The FlashAttention-2 kernel (PyTorch SDPA's flash backend, the flash-attn 2 package), for the
  // frameworks whose attention runs on it (FrameworkMemory::flash_attention_2): measured per
  // architecture (calibration by_arch, docs/cost_model.md); 0 = no measurement, the fused rate above.
  double attn_fa2_fwd_eff = 0;
  double attn_fa2_bwd_eff = 0;
  // The 2022 FlashAttention Triton kernel (attention_backend "triton") runs at this fraction of the
  // fused flash kernels' rate (no Hopper-specific instructions, bias handling).
  double triton_attn_eff = 0.5;
  // Memory-bound ops: bytes / (hbm_gbps * hbm_eff).
  double hbm_eff = 0.70;
  // mamba_ssm's Triton kernels (the SSD scan's five forward kernels, the gated RMSNorm) stream at most
  // this many GB/s per SM: their rate follows the GPU's SMs, not its HBM (GB200 against H200: 1.34x and
  // 1.0x for two Triton SSM kernels where HBM grows 1.67x and cuBLAS 2.44x, state-spaces/mamba issue
  // 904). Set where H100's cap meets its HBM-bound rate (3,350 GB/s x 0.662 / 132 SMs), so that H100
  // is unchanged: a constant from measurements, not fitted (docs/cost_model.md, "Hybrid Mamba
  // models"). 0 = no cap; CPUs (one "SM") have none.
  double ssm_kernel_sm_gbps = 16.8;
  // The GPU's idle time at each kernel boundary, microseconds: measured, not fitted. 2.1 us per
  // kernel launched on a stream and 1.3 us inside a CUDA graph on an H100 (Spector, Juravsky et al.,
  // "Look Ma, No Bubbles!", Hazy Research, 2025-05-27; docs/cost_model.md). The graph value applies
  // where the plan captures its layers in CUDA graphs (ParallelConfig::cuda_graph_impl, framework_params).
  double kernel_overhead_us = 2.1;
  double kernel_overhead_graph_us = 1.3;
  // --- communication ---
  // Achieved bus bandwidth as a fraction of the nominal per-direction link bandwidth.
  double nvlink_eff = 0.80;
  double network_eff = 0.80;
  double a2a_eff = 0.60;  // extra factor for all-to-all (many small messages)
  // --- MoE routing ---
  // Coefficient of variation of the tokens per expert under learned (auxiliary-loss, dropless) routing:
  // 0.3 from Wang et al. 2024 (arXiv 2408.15664, Table 2: MaxVio_global 0.52-0.72 at 64 experts);
  // simulator/moe_load.h turns it into the busiest EP rank's load. A documented value, not fitted.
  double moe_expert_cv = 0.3;
  // Compute slows down by this fraction while a collective runs concurrently on the same GPU
  // (SM and memory contention of overlapped communication).
  double overlap_slowdown = 0.10;
  // 1 when communication runs on its own stream beside compute (GPUs); 0 when every collective blocks
  // the compute (the CPU executor's MPI calls): then nothing is overlapped.
  double comm_overlap = 1.0;
  // --- step-level ---
  // A per-step host cost of the user's own runs (`mplan calibrate --runs` fits it to their measured
  // steps); 0 in the shipped fit, which charges each framework's own per-step host cost instead
  // (step_host_sync_s below and simulator/framework_data.h, added to this by framework_params).
  double optimizer_overhead_s = 0.0;
  // The per-step host time of a training loop that does host work between steps whose duration no
  // published measurement gives (its data/frameworks file says "fitted": Composer's per-batch
  // bookkeeping, Paxml's host-timed step): one value for every such loop, fitted.
  double step_host_sync_s = 0.0;
  // --- the plan's framework (set by framework_params from data/frameworks, not calibrated) ---
  // HBM bytes of the FP8 scaling kernels of one GEMM: per element of its activation input (forward)
  // and of its output gradient (backward), and per weight element in the forward and in the backward.
  double fp8_cast_act_bytes = 3.0;
  double fp8_cast_weight_fwd_bytes = 0.0;
  double fp8_cast_weight_bwd_bytes = 0.0;
  // --- the executor mplan verify predicts (set by verify, not calibrated) ---
  // Bytes per activation element where they differ from the precision's (0: the precision's;
  // OpContext::activation_bytes): mplan's CUDA executor keeps fp32 tensors around bf16 GEMMs (4).
  double activation_bytes = 0.0;
  // HBM bytes per converted element of a GEMM's activation operands, where the executor converts them
  // in separate kernels (0: none): mplan's CUDA executor converts fp32 tensors to bf16 (read 4, write 2
  // = 6) - the input in the forward, the output gradient once for both backward GEMMs, the input
  // again for the weight gradient.
  double gemm_operand_cast_bytes = 0.0;
  // --- memory (documented constants, not fitted; docs/memory.md) ---
  // Caching-allocator slack (reserved - allocated) as a fraction of the allocated peak: the 5 %
  // temporaries buffer of Megatron-LM's theoretical_memory_usage.py.
  double allocator_overhead_frac = 0.05;
  // Process memory outside the tensor allocator: CUDA context and lazily loaded module images
  // (PyTorch reports 0.3-0.6 GiB with CUDA >= 11.7 lazy loading; pytorch#109888, PR #86509).
  double reserved_gib = 0.5;
  // NCCL buffers per communicator: 16 channels x 2 ring peers x (SIMPLE 4 MiB + LL128 4.6875 MiB +
  // LL 0.5 MiB) (nccl src/init.cc DEFAULT_BUFFSIZE, device.h protocol sizes).
  double comm_buffer_bytes = 16 * 2 * 9.1875 * 1024 * 1024;

  // Kernel efficiency of a framework's training code relative to Megatron-Core's (Transformer Engine
  // kernels and fusions): multiplies the GEMM, attention and memory-bound efficiencies of its plans.
  // Fitted on that framework's development rows; missing = 1.
  std::map<Framework, double> framework_eff;
  double framework_factor(Framework f) const {
    auto it = framework_eff.find(f);
    return it == framework_eff.end() ? 1.0 : it->second;
  }

  // 80 % prediction intervals: per family ("dense", "moe") the bounds of ln(measured / predicted)
  // from the cross-validated residuals (quantile level set so that 80 % of held-out sources' rows fall
  // inside); filled from Calibration::intervals.
  std::map<std::string, std::pair<double, double>> interval_lo_hi;

  double eff_for(Precision p) const {
    auto it = precision_eff.find(p);
    return it == precision_eff.end() ? 1.0 : it->second;
  }
};

// {"lo", "hi"} (or "q10", "q90") of one interval family, if present, finite and ordered.
std::optional<std::pair<double, double>> interval_bounds(const nlohmann::json& q);

// A calibration: global parameters plus per-architecture overrides of a few of them (GEMM and
// attention kernel efficiencies differ between GPU generations), keyed by GpuSpec::arch.
struct Calibration {
  std::string gpu;   // GpuSpec::name it was fitted for ("" = any)
  std::string arch;  // GpuSpec::arch it was fitted for ("" = any: global parameters + by_arch overrides)
  CostParams params;
  std::map<std::string, std::map<std::string, double>> by_arch;
  nlohmann::json fit = nlohmann::json::object();  // fit error, rows used, date (written by calibrate)
  // Prediction intervals: per family ("dense", "moe"), quantiles of ln(measured / predicted) of the
  // cross-validated residuals ({"lo": .., "hi": .., "level": .., "target": .., "n": ..}; "q10"/"q90"
  // are read as lo/hi); empty = none (mplan validate --cv).
  nlohmann::json intervals = nlohmann::json::object();

  // The parameters for one GPU: global ones with that architecture's overrides applied.
  CostParams params_for(const GpuSpec& g) const;
};

// Reads and writes one named parameter of CostParams (names as in calibration JSON, plus
// "precision_eff.<precision>"); nullptr for an unknown name.
double* cost_param_ref(CostParams& p, const std::string& name);

// The physical range of a named parameter (efficiencies (0, 1], overheads >= 0 with generous caps);
// calibration files outside it are refused with the field named.
struct ParamRange {
  double lo, hi;
  bool lo_open;  // (lo, hi] instead of [lo, hi]
};
ParamRange cost_param_range(const std::string& name);

// Documented defaults for a GPU (see docs/cost_model.md): the shipped calibration (fitted to the
// published runs of shared/calibration by `mplan validate --fit`, reproducible from committed inputs)
// for the cluster's GPU architecture, or the physical starting values when none applies.
CostParams default_cost_params(const ClusterSpec& c);
// The shipped calibration itself.
const Calibration& shipped_calibration();

// "" when `c` applies to `gpu`; else why not: the calibration was fitted for another GPU
// architecture (its "arch", or for files without one the architecture of the preset GPU it names)
// and carries no by_arch overrides for this one. Callers refuse the mismatch (exit 2) unless --force.
std::string calibration_mismatch(const Calibration& c, const GpuSpec& gpu);
// The architecture `c` was fitted for ("" = any), inferred from its GPU name when "arch" is absent.
std::string calibration_arch(const Calibration& c);

nlohmann::json calibration_to_json(const Calibration& c);
// Fields missing from "params" keep the defaults passed in `base`.
Expected<Calibration> calibration_from_json(const nlohmann::json& j, const CostParams& base);
Expected<Calibration> read_calibration_file(const std::string& path, const CostParams& base);

}  // namespace mplan
