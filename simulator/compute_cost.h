// Compute cost of one op of the vocabulary on one GPU: roofline with calibrated efficiency
// (GEMM efficiency from shape, precision and wave quantisation; attention forward/backward
// efficiencies; memory-bound ops at a fraction of HBM bandwidth; FP8 casts).
#pragma once
#include "core/cluster_spec.h"
#include "core/ops.h"
#include "simulator/cost_params.h"

namespace mplan {

struct OpCost {
  double fwd_s = 0;
  double bwd_input_s = 0;   // dgrad (B of zero-bubble); for non-GEMM ops the whole backward
  double bwd_weight_s = 0;  // wgrad (W of zero-bubble)
};

// `gemm_precision`: the precision the op's GEMMs run in (fp8 layers vs bf16 head/router).
OpCost compute_op_cost(const Op& op, Precision gemm_precision, const ClusterSpec& c, const CostParams& p);

// The per-GPU, per-precision quantities every op cost reads (peaks, HBM rate, kernel overhead,
// precision efficiency), looked up once: an op list costs all its ops with one or two of these.
struct ComputeRates {
  Precision prec = Precision::bf16;
  double peak = 0;                // FLOP/s of `prec` (bf16's, or the first listed, where the GPU has no such mode)
  double peak_bf16 = 0;           // FLOP/s of bf16 (attention runs in bf16 even in FP8 recipes)
  double vec_peak = 0;            // FLOP/s of fp32 (1e15 where unknown): the transcendental work of CPU ops
  double prec_eff = 1;            // CostParams::eff_for(prec)
  double hbm = 0;                 // achieved HBM bytes/s
  double ssm_bw = 0;              // bytes/s of mamba_ssm's Triton kernels: hbm, or less (CostParams::ssm_kernel_sm_gbps)
  double overhead = 0;            // per kernel, s
  bool per_expert_gemms = false;  // grouped expert GEMMs run one kernel per expert (FrameworkRuns)
  int sm_count = 1;
};
ComputeRates compute_rates(Precision gemm_precision, const ClusterSpec& c, const CostParams& p);
// compute_op_cost with the rates of `r` (the same doubles).
OpCost compute_op_cost(const Op& op, const ComputeRates& r, const CostParams& p);

// Efficiency of one GEMM (exposed for tests and the profiles fit).
double gemm_efficiency(const GemmShape& s, Precision prec, const ClusterSpec& c, const CostParams& p);
double gemm_time_s(const GemmShape& s, Precision prec, const ClusterSpec& c, const CostParams& p);

}  // namespace mplan
