// Model-state memory by framework (see memory_states.h for the accounting and its sources).
#include "simulator/memory_states.h"

#include <algorithm>
#include <string_view>

#include "core/framework_profile.h"

namespace mplan {

double fp8_weight_copy_bytes(Precision p, const std::string& arch) {
  switch (p) {
    // Float8 (delayed / current scaling): data + a transposed copy for dgrad on Hopper and older; Blackwell
    // runs non-TN fp8 GEMMs, so no transpose (TE utils.py is_non_tn_fp8_gemm_supported).
    case Precision::fp8:
      return std::string_view(arch) == "blackwell" ? 1.0 : 2.0;
    // MXFP8: rowwise and columnwise data, one E8M0 scale per 32 elements each (TE quantizer.cpp)
    case Precision::mxfp8:
      return 2.0 * (1.0 + 1.0 / 32);
    // NVFP4: rowwise and columnwise 4-bit data with one fp8 scale per 16 elements each
    case Precision::nvfp4:
      return 2.0 * (0.5 + 1.0 / 16);
    default:
      return 0;
  }
}

void fill_stage_params(StageWork& st, const ModelSpec& m, const ParallelConfig& p, const StageParams& sp, int stage, int layers) {
  fill_stage_params(st, m, p, sp, stage, layers, count_params(m));
}

void fill_stage_params(StageWork& st, const ModelSpec& m, const ParallelConfig& p, const StageParams& sp, int stage, int layers,
                       const ParamCounts& pc) {
  st.dense_params = sp.dense / p.tp;
  st.expert_params = sp.expert / (double(p.ep) * p.etp);
  st.layers = layers;
  const bool last = stage == p.pp - 1;
  double head = m.tied_embeddings ? (p.pp > 1 ? double(m.vocab_size) * m.hidden_size : 0) : pc.output;
  double emb = (stage == 0 ? pc.embedding : 0) + (last ? head : 0);
  st.unquantized_params = (emb + (last ? pc.final_norm : 0) + layers * pc.dense_layer.norms) / p.tp;
  auto per_rank = [&](const LayerParams& lp) { return (lp.total() - lp.experts) / p.tp + lp.experts / (double(p.ep) * p.etp); };
  st.layer_params = layers > 0 ? std::max(per_rank(pc.dense_layer), m.moe ? per_rank(pc.moe_layer) : 0.0) : 0;
}

double dense_shard_group(const Plan& plan) {
  const ParallelConfig& p = plan.parallel;
  const FrameworkMemory fw = framework_memory(plan.training.framework);
  double d = double(std::max(1, p.dp())) * (fw.shard_over_cp ? p.cp : 1);
  return std::max(1.0, d / std::max(1, p.dp_replicate));
}

double expert_shard_group(const Plan& plan) {
  const ParallelConfig& p = plan.parallel;
  return std::max(1.0, double(std::max(1, p.edp())) / std::max(1, p.dp_replicate));
}

namespace {

// framework_profile(f), remembered per thread for the last framework asked (the profiles are an
// immutable table loaded once): the planner's memory bounds ask it for every stage of every layout.
const FrameworkProfile& profile_of(Framework f) {
  thread_local Framework last{};
  thread_local const FrameworkProfile* hit = nullptr;
  if (!hit || last != f) {
    hit = &framework_profile(f);
    last = f;
  }
  return *hit;
}

struct Ctx {
  const Plan& plan;
  const StageWork& st;
  const FrameworkProfile& fw;
  double dd, de;  // shard groups, dense and expert
  bool fp32, frozen;
  // bytes of `per_param` bytes per parameter over the sharded groups (or replicated when !sharded)
  double over(double per_param, bool sharded) const {
    return sharded ? st.dense_params * per_param / dd + st.expert_params * per_param / de
                   : (st.dense_params + st.expert_params) * per_param;
  }
  double params() const { return st.dense_params + st.expert_params; }
};

ModelStateBytes megatron(const Ctx& x) {
  const ParallelConfig& p = x.plan.parallel;
  const Precision prec = x.plan.training.precision;
  ModelStateBytes b;
  double hp = x.fp32 ? 4.0 : 2.0;
  double quant = fp8_weight_copy_bytes(prec, x.plan.cluster.gpu.arch);
  double linear = std::max(0.0, x.params() - x.st.unquantized_params);  // parameters of fp8 linears
  if (quant > 0) {
    // fp8 primary weights replace the bf16 copy of the linears; otherwise TE caches a quantized copy
    b.weights = p.fp8_param_gather ? x.st.unquantized_params * hp + linear * quant : x.params() * hp + linear * quant;
  } else {
    b.weights = x.params() * hp;
  }
  double g = x.fp32 ? 4.0 : (p.grad_reduce_in_bf16 ? 2.0 : 4.0);
  // master weights (none for fp32 training: the parameters are fp32) and the two Adam moments
  double master = x.fp32                              ? 0.0
                  : p.main_params == MainParams::fp32 ? 4.0
                  : p.main_params == MainParams::none ? 0.0
                                                      : 2.0;  // int16 remainders or a bf16 copy
  double o = master + (p.adam_states_bf16 ? 4.0 : 8.0);
  if (p.zero >= 3) {
    // Megatron-FSDP: parameters sharded too; two units (layers) gathered at a time, one unit of
    // unsharded gradients (docs/user-guide/features/megatron_fsdp.md)
    b.weights = b.weights / std::max(1.0, x.dd) + 2 * x.st.layer_params * hp;
  }
  if (!x.frozen) {
    b.gradients = x.over(g, p.zero >= 2) + (p.zero >= 3 ? x.st.layer_params * g : 0);
    b.optimizer = x.over(o, p.zero >= 1);
  }
  return b;
}

// PyTorch FSDP (torchtitan FSDP2, Composer FSDP1) and MaxText: fp32 master parameters are the sharded
// parameters themselves; bf16 copies exist only while gathered.
ModelStateBytes sharded_fp32(const Ctx& x) {
  const ParallelConfig& p = x.plan.parallel;
  const FrameworkProfile& fw = x.fw;
  ModelStateBytes b;
  double gathered = x.fp32 ? 4.0 : 2.0;
  b.weights = x.over(4.0, p.zero >= 3);
  if (!x.frozen) {
    b.gradients = x.over(4.0, p.zero >= 2);
    b.optimizer = x.over(8.0, p.zero >= 1);
  }
  if (p.zero >= 3) {
    if (fw.fsdp_pp_keeps_stage_gathered && p.pp > 1) {
      // reshard_after_forward=False under PP: the stage stays gathered; gradient sync is deferred to the
      // last micro-batch, so fp32 unsharded gradients accumulate (FSDPParam unsharded_accumulated_grad)
      b.weights += x.params() * gathered;
      if (!x.frozen) b.gradients += x.params() * 4.0;
    } else {
      // the current and the prefetched unit gathered; in the backward the unit's bf16 gradients and
      // the fp32 reduce-scatter input
      b.weights += 2 * x.st.layer_params * gathered;
      if (!x.frozen) b.gradients += x.st.layer_params * (gathered + 4.0);
      // torchtitan's root module (embeddings, final norm, output) is not resharded after forward
      if (fw.fsdp_root_unsharded) b.weights += x.st.unquantized_params * gathered;
    }
  } else if (p.zero == 2) {
    b.weights += x.params() * gathered;  // SHARD_GRAD_OP keeps every unit gathered from forward to backward
  }
  return b;
}

}  // namespace

ModelStateBytes model_state_bytes(const Plan& plan, const StageWork& st) {
  Ctx x{plan,
        st,
        profile_of(plan.training.framework),
        dense_shard_group(plan),
        expert_shard_group(plan),
        plan.training.precision == Precision::fp32,
        plan.training.frozen_base()};
  if (x.fw.model_states == ModelStateLayout::mixed_precision_master) return megatron(x);
  return sharded_fp32(x);
}

}  // namespace mplan
