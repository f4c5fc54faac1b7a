// Stage memory of one rank: model states by framework (memory_states.cpp), peak activations from the
// simulated schedule, NCCL buffers, GEMM workspaces, the caching allocator's slack and the CUDA context.
// The fixed terms are documented constants (docs/memory.md), none fitted to published memory:
//  - NCCL: per communicator the rank belongs to, CostParams::comm_buffer_bytes (channels x peers x the
//    SIMPLE 4 MiB + LL128 4.6875 MiB + LL 0.5 MiB buffers of nccl src/init.cc), outside the allocator;
//  - GEMM workspaces, inside the allocator: Transformer Engine's cuBLAS workspace (32 MiB on sm90+,
//    4 MiB before; four compute streams for grouped expert GEMMs) and PyTorch's cuBLAS workspace
//    (32 MiB on Hopper and newer, 8 MiB before: CublasHandlePool.cpp);
//  - allocator slack (reserved - allocated): CostParams::allocator_overhead_frac of the allocated peak,
//    the 5 % temporaries buffer of Megatron-LM's theoretical_memory_usage.py;
//  - CUDA context and module images (CostParams::reserved_gib), outside the allocator.
#include "simulator/memory.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string_view>

#include "core/units.h"
#include "simulator/memory_states.h"

namespace mplan {

namespace {

// Communicators (groups of more than one rank) a rank of this layout belongs to.
int communicators(const ParallelConfig& p, bool moe) {
  int n = 0;
  for (int g : {p.tp, p.cp, p.dp() * p.cp, p.pp}) n += g > 1 ? 1 : 0;
  if (moe)
    for (int g : {p.ep, p.etp, p.edp()}) n += g > 1 ? 1 : 0;
  return n;
}

double workspace_bytes(const ClusterSpec& c, bool moe) {
  const std::string_view a = c.gpu.arch;  // (a view compares the length first: no strlen per call)
  if (a == "cpu") return 0;
  const double MiB = 1024.0 * 1024;
  bool sm90 = a != "ampere" && a != "volta";
  double te = sm90 ? 32 * MiB : 4 * MiB, torch = sm90 ? 32 * MiB : 8.125 * MiB;
  return te * (moe ? 4 : 1) + torch;
}

}  // namespace

MemoryBreakdown stage_memory(const Plan& plan, const StageWork& st, double peak_act_bytes, const CostParams& prm) {
  const ParallelConfig& p = plan.parallel;
  ModelStateBytes ms = model_state_bytes(plan, st);
  MemoryBreakdown mb;
  mb.weights = ms.weights;
  mb.gradients = ms.gradients;
  mb.optimizer = ms.optimizer;
  mb.activations = peak_act_bytes;
  mb.comm_buffers = communicators(p, bool(plan.model.moe)) * prm.comm_buffer_bytes;
  double workspace = workspace_bytes(plan.cluster, bool(plan.model.moe));
  double allocated = mb.weights + mb.gradients + mb.optimizer + mb.activations + workspace;
  double slack = allocated * prm.allocator_overhead_frac;
  double context = prm.reserved_gib * kGiB;
  mb.other = workspace + slack + context;
  mb.outside_allocator = (mb.comm_buffers + context) / kGiB;
  mb.allocator_slack = slack / kGiB;
  mb.weights /= kGiB;
  mb.gradients /= kGiB;
  mb.optimizer /= kGiB;
  mb.activations /= kGiB;
  mb.comm_buffers /= kGiB;
  mb.other /= kGiB;
  return mb;
}

bool StageMemoryInputs::operator==(const StageMemoryInputs& o) const {
  auto same = [](double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); };
  return same(dense, o.dense) && same(expert, o.expert) && same(unquantized, o.unquantized) && same(layer, o.layer);
}

StageMemoryInputs stage_memory_inputs(const StageWork& st) {
  return {st.dense_params, st.expert_params, st.unquantized_params, st.layer_params};
}

}  // namespace mplan
