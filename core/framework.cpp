// Framework names and their memory facts (see framework.h). Sources, read at the commits named in
// docs/memory.md:
//  - Megatron-Core: the distributed optimizer and DDP buffers are built over the data-parallel group
//    with context parallelism (process_groups_config.py setup_process_groups_for_ddp, dp_cp_group);
//    validate_args keeps main gradients in fp32 for bf16 unless --grad-reduce-in-bf16
//    (megatron/training/arguments.py); --recompute-modules and fine-grained activation offloading
//    (transformer_config.py recompute_modules, offload_modules); logged memory is torch's allocated peak.
//  - torchtitan: FSDP2 shards over the flattened dp_shard x cp mesh ("dp_shard_cp", parallel_dims.py);
//    MixedPrecisionPolicy(param bf16, reduce fp32) keeps fp32 sharded grads; the loss upcasts the full
//    logits to fp32 (train.py cross_entropy(pred.float())); the console prints peak reserved bytes
//    (metrics.py DeviceMemoryMonitor, reserved_bytes.all.peak).
//  - Composer/llm-foundry: FSDP1 FULL_SHARD with limit_all_gathers (two units unsharded), fused
//    flash-attn cross-entropy (MPT loss_fn 'fused_crossentropy'), grads upcast to fp32.
//  - MaxText: fp32 weights/grads/Adam sharded over the fsdp axis (configs/base.yml); XLA's compiled
//    estimate is what it reports.
// What each framework runs (framework_runs), read at the commits of August 2026 (llm-foundry: July 2025):
//  - Megatron-LM (d98e8a6): megatron/core/pipeline_parallel/schedules.py get_forward_backward_func runs no
//    pipeline, 1F1B (forward_backward_pipelining_without_interleaving) or interleaved 1F1B (with vpp):
//    no GPipe and no zero-bubble schedule. CP: arguments.py --cp-comm-type p2p | a2a | allgather (| a2a+p2p).
//  - torchtitan (b5bcd76): pipeline_parallel_schedule takes PyTorch's schedule names; pipeline_parallel.py
//    (lines 244-257) runs single-stage schedules (GPipe, 1F1B) with exactly one stage per rank and
//    multi-stage ones (Interleaved1F1B, LoopedBFS, InterleavedZeroBubble, ZBVZeroBubble, DualPipeV) with
//    at least two: its zero-bubble schedules are interleaved ones, not ZB-H1 with one stage per rank
//    (mplan's zero_bubble), which it cannot run. CP: PyTorch's _ContextParallel since torchtitan #2144
//    (January 2026) with no choice of exchange, K/V all-gathered; before, context_parallel_rotate_method
//    "allgather" (the default) or "alltoall" (a ring of K/V shards); never head-scattering a2a.
//  - llm-foundry (8c8dd48): Composer FSDP; its only tensor-parallel strategy is 'ffn'
//    (llmfoundry/tp/__init__.py, the MLP alone), no pipeline and no context parallelism.
//  - MaxText (e591f30): src/maxtext/layers/pipeline.py runs the pipeline as a forward scan over
//    microbatches x repeats + stages - 1 iterations whose backward is the scan's derivative: all
//    forwards before the backwards (GPipe; circular repeats loop it breadth-first, which mplan's
//    interleaved 1F1B does not model, so vpp = 1). configs/base.yml: the pipeline stages divide the
//    layers evenly, and num_pipeline_microbatches is a multiple of the stages. CP:
//    context_parallel_strategy all_gather (default) or ring (GPU); ulysses/usp run on TPUs only
//    (configs/types.py).
#include "core/framework.h"

#include <algorithm>
#include <cctype>

#include "core/parallel_config.h"

namespace mplan {

std::string to_string(Framework f) {
  switch (f) {
    case Framework::megatron:
      return "megatron";
    case Framework::torchtitan:
      return "torchtitan";
    case Framework::llm_foundry:
      return "llm-foundry";
    case Framework::maxtext:
      return "maxtext";
  }
  return "?";
}

const std::vector<std::string>& framework_choices() {
  static const std::vector<std::string> v = {"megatron", "torchtitan", "llm-foundry", "maxtext"};
  return v;
}

std::optional<Framework> parse_framework(const std::string& s) {
  for (Framework f : {Framework::megatron, Framework::torchtitan, Framework::llm_foundry, Framework::maxtext})
    if (to_string(f) == s) return f;
  return std::nullopt;
}

std::optional<Framework> framework_from_text(const std::string& text) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  auto has = [&](const char* k) { return t.find(k) != std::string::npos; };
  if (has("torchtitan")) return Framework::torchtitan;
  if (has("llm-foundry") || has("composer")) return Framework::llm_foundry;
  if (has("maxtext") || has("paxml") || has("jax")) return Framework::maxtext;
  if (has("megatron") || has("nemo")) return Framework::megatron;
  return std::nullopt;
}

FrameworkMemory framework_memory(Framework f) {
  FrameworkMemory m;
  switch (f) {
    case Framework::megatron:
      break;
    case Framework::torchtitan:
      m.supports_cross_entropy_fusion = false;  // no fused/chunked loss at the benchmark commits
      m.zero_levels = 0b1001;
      m.default_zero = 3;
      m.supports_recompute_modules = false;
      m.supports_activation_offload = false;
      m.reports_reserved = true;
      m.flash_attention_2 = true;
      break;
    case Framework::llm_foundry:
      m.shard_over_cp = false;  // no context parallelism
      m.zero_levels = 0b1101;
      m.default_zero = 3;
      m.default_cross_entropy_fusion = true;
      m.flash_attention_2 = true;
      m.supports_recompute_modules = false;
      m.supports_activation_offload = false;
      break;
    case Framework::maxtext:
      m.shard_over_cp = false;
      m.zero_levels = 0b1000;
      m.default_zero = 3;
      m.supports_cross_entropy_fusion = false;
      m.supports_recompute_modules = false;
      m.supports_activation_offload = false;
      break;
  }
  return m;
}

namespace {
constexpr unsigned bit(Schedule s) { return 1u << unsigned(s); }
constexpr unsigned bit(CpCommType c) { return 1u << unsigned(c); }
}  // namespace

FrameworkRuns framework_runs(Framework f) {
  FrameworkRuns r;
  switch (f) {
    case Framework::megatron:
      r.schedules = bit(Schedule::one_f_one_b) | bit(Schedule::interleaved);
      r.cp_comm = bit(CpCommType::p2p) | bit(CpCommType::a2a) | bit(CpCommType::allgather);
      r.per_expert_gemms = true;
      break;
    case Framework::torchtitan:
      r.schedules = bit(Schedule::gpipe) | bit(Schedule::one_f_one_b) | bit(Schedule::interleaved);
      r.cp_comm = bit(CpCommType::allgather);
      r.tp_overlap_share = 0.48;
      break;
    case Framework::llm_foundry:
      r.tensor_parallel = r.pipeline_parallel = r.context_parallel = false;
      break;
    case Framework::maxtext:
      r.schedules = bit(Schedule::gpipe);
      r.cp_comm = bit(CpCommType::p2p) | bit(CpCommType::allgather);
      r.uneven_pipeline = false;
      r.microbatches_multiple_of_pp = true;
      break;
  }
  if (!r.pipeline_parallel) r.schedules = 0;
  if (!r.context_parallel) r.cp_comm = 0;
  return r;
}

bool runs_schedule(Framework f, Schedule s, int pp, int vpp) {
  if (pp <= 1) return s == Schedule::one_f_one_b && vpp <= 1;
  if ((s == Schedule::interleaved) != (vpp > 1)) return false;
  return (framework_runs(f).schedules & bit(s)) != 0;
}

bool runs_pipeline(Framework f, int pp, int vpp) {
  for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved, Schedule::zero_bubble})
    if (runs_schedule(f, s, pp, vpp)) return true;
  return false;
}

bool runs_cp_comm(Framework f, CpCommType c) { return (framework_runs(f).cp_comm & bit(c)) != 0; }
CpCommType default_cp_comm(Framework f) {
  return f == Framework::torchtitan || f == Framework::maxtext ? CpCommType::allgather : CpCommType::p2p;
}

std::string schedule_names(Framework f) {
  std::string out;
  for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved, Schedule::zero_bubble})
    if (framework_runs(f).schedules & bit(s)) out += (out.empty() ? "" : ", ") + to_string(s);
  return out.empty() ? "none" : out;
}

std::string cp_comm_names(Framework f) {
  std::string out;
  for (CpCommType c : {CpCommType::p2p, CpCommType::a2a, CpCommType::allgather})
    if (runs_cp_comm(f, c)) out += (out.empty() ? "" : ", ") + to_string(c);
  return out.empty() ? "none" : out;
}

std::string framework_refusal(const TrainingSpec& t, const ParallelConfig& p) {
  const Framework f = t.framework;
  const FrameworkRuns r = framework_runs(f);
  const std::string fw = "framework " + to_string(f);
  auto n = [](int64_t v) { return std::to_string(v); };
  if (p.tp > 1 && !r.tensor_parallel)
    return "tp=" + n(p.tp) + ": " + fw + " has no tensor parallelism of attention and MLP; use tp=1";
  if (p.pp > 1 && !r.pipeline_parallel) return "pp=" + n(p.pp) + ": " + fw + " has no pipeline parallelism; use pp=1";
  if (p.cp > 1 && !r.context_parallel) return "cp=" + n(p.cp) + ": " + fw + " has no context parallelism; use cp=1";
  if (p.pp > 1 && !runs_schedule(f, p.schedule, p.pp, p.vpp))
    return "schedule " + to_string(p.schedule) + (p.vpp > 1 ? " with vpp=" + n(p.vpp) : std::string()) + ": " + fw +
           " runs the pipeline schedules " + schedule_names(f) + " (interleaved means vpp > 1, the others vpp = 1)";
  if (p.cp > 1 && !runs_cp_comm(f, p.cp_comm_type))
    return "cp_comm_type " + to_string(p.cp_comm_type) + ": " + fw + " exchanges context-parallel K/V by " + cp_comm_names(f);
  const bool uneven =
      !p.pipeline_layout.empty() || p.num_layers_in_first_pipeline_stage > 0 || p.num_layers_in_last_pipeline_stage > 0;
  if (p.pp > 1 && uneven && !r.uneven_pipeline)
    return "pipeline_layout / num_layers_in_first/last_pipeline_stage: " + fw + " splits the layers evenly over the stages";
  const int64_t per_step = int64_t(p.micro_batch_size) * std::max(1, p.dp());
  if (p.pp > 1 && r.microbatches_multiple_of_pp && per_step > 0 && t.global_batch_size % per_step == 0 &&
      (t.global_batch_size / per_step) % p.pp != 0)
    return "micro-batches " + n(t.global_batch_size / per_step) + ": " + fw + " needs a multiple of pp=" + n(p.pp) +
           " micro-batches per step";
  const unsigned z = framework_memory(f).zero_levels;
  if (p.zero >= 0 && p.zero <= 3 && !(z & (1u << p.zero))) {
    std::string ok;
    for (int k = 0; k <= 3; ++k)
      if (z & (1u << k)) ok += (ok.empty() ? "" : ", ") + n(k);
    return "zero=" + n(p.zero) + ": " + fw + " has zero " + ok;
  }
  return "";
}

}  // namespace mplan
