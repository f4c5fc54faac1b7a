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

// Efficiency of one GEMM (exposed for tests and the profiles fit).
double gemm_efficiency(const GemmShape& s, Precision prec, const ClusterSpec& c, const CostParams& p);
double gemm_time_s(const GemmShape& s, Precision prec, const ClusterSpec& c, const CostParams& p);

}  // namespace mplan
