// The cost model's prediction for one profile row, for fitting: the row turned into the op, GEMM
// shape or group placement the simulator costs, and costed by the simulator's own formulas
// (simulator/compute_cost.h gemm_time_s / compute_op_cost, simulator/collectives.h
// collective_time_s), so the fit and the simulation can never disagree.
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

// Predicted time of the row's op and pass (dtype parsed as the GEMM precision; fp32 when unknown).
double predict_kernel_s(const KernelRow& r, const ClusterSpec& c, const CostParams& p);

double eval_collective_time_s(Collective coll, double bytes, int size, int domains, int max_per_domain, const ClusterSpec& c,
                              const CostParams& p);
double predict_collective_s(const CollectiveRow& r, const ClusterSpec& c, const CostParams& p);

std::optional<Collective> parse_collective(const std::string& s);

}  // namespace mplan::profiles
