// The cost model's prediction for one profile row, for fitting. This is a COPY of the simulator's
// formulas (simulator/compute_cost.cpp gemm_time_s / compute_op_cost and simulator/collectives.cpp
// collective_time_s / p2p_time_s) and must stay in sync with them until they live in one place;
// tests/profiles/test_cost_eval.cpp compares both whenever the simulator library is built.
#pragma once
#include <optional>
#include <string>

#include "core/cluster_spec.h"
#include "core/ops.h"
#include "profiles/profile_db.h"
#include "simulator/cost_params.h"

namespace mplan::profiles {

// Class of an op name of the vocabulary (gemm, attention, memory-bound, comm, optimizer ...).
OpKind op_kind_of(const std::string& op_name);
// "memory" for norm / elementwise / embedding / loss / optimizer rows, else to_string(kind).
std::string fit_class_of(const KernelRow& r);

double eval_wave_eff(int64_t m, int64_t n, int64_t groups, int sm_count, const CostParams& p);
double eval_gemm_time_s(const GemmShape& s, Precision prec, const ClusterSpec& c, const CostParams& p);
// Predicted time of the row's op and pass (dtype parsed as the GEMM precision; fp32 when unknown).
double predict_kernel_s(const KernelRow& r, const ClusterSpec& c, const CostParams& p);

double eval_collective_time_s(Collective coll, double bytes, int size, int domains, int max_per_domain,
                              const ClusterSpec& c, const CostParams& p);
double predict_collective_s(const CollectiveRow& r, const ClusterSpec& c, const CostParams& p);

std::optional<Collective> parse_collective(const std::string& s);

}  // namespace mplan::profiles
