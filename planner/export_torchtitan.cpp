// A torchtitan job TOML (torchtitan/config/job_config.py field names) for the layouts torchtitan
// supports: FSDP (ZeRO 3, or ZeRO 2 as FSDP without resharding after forward), DDP alone, TP with
// sequence parallel ("loss parallel"), PP with its schedules and explicit split points, CP, and
// expert parallelism inside the data-parallel x context-parallel ranks. Everything else is an error
// that says what to change.
#include <sstream>

#include "planner/planner.h"

namespace mplan {

Expected<std::string> export_torchtitan_toml(const Plan& plan) {
  const ModelSpec& m = plan.model;
  const ParallelConfig& p = plan.parallel;
  const TrainingSpec& t = plan.training;
  std::vector<std::string> e;
  if (p.zero == 1)
    e.push_back("torchtitan has no ZeRO-1 (distributed optimizer without sharded gradients): use zero 2 (FSDP that keeps "
                "parameters after forward) or zero 3 (FSDP)");
  if (p.zero == 0 && (p.tp > 1 || p.pp > 1 || p.cp > 1 || p.ep > 1))
    e.push_back("torchtitan's DDP (data_parallel_replicate_degree alone) does not combine with TP/PP/CP/EP: use zero 2 or 3");
  if (p.tp > 1 && !p.sp) e.push_back("torchtitan's tensor parallelism always shards the sequence: use sp on");
  if (p.etp > 1) e.push_back("expert tensor parallelism (etp > 1) is not a torchtitan option here: use etp 1");
  if (p.ep > 1 && !(p.cp <= p.ep && p.ep <= p.dp() * p.cp))
    e.push_back("torchtitan needs cp <= ep <= dp*cp for expert parallelism (ep=" + std::to_string(p.ep) + ")");
  if (p.cp > 1 && p.cp_comm_type == CpCommType::a2a)
    e.push_back("torchtitan's context parallelism rotates K/V shards (allgather or alltoall), it has no head-scattering a2a: "
                "use cp_comm p2p or allgather");
  if (p.schedule == Schedule::zero_bubble)
    e.push_back("ZB-H1 with one stage per rank is not a torchtitan schedule: use 1f1b or interleaved");
  if (p.recompute == Recompute::full && p.recompute_num_layers > 0)
    e.push_back("torchtitan recomputes all layers or every n-th layer, not the first k of each stage: use recompute_layers 0");
  if (t.precision == Precision::fp16 || t.precision == Precision::nvfp4)
    e.push_back("torchtitan trains in bf16 or fp32 (optionally with float8/mxfp8 converters), not " +
                std::string(to_string(t.precision)));
  if (p.attention_backend == AttentionBackend::unfused) e.push_back("torchtitan uses fused (SDPA/flex) attention only");
  // pipeline split points: the first layer of every stage but the first, in model order
  std::vector<std::string> splits;
  if (p.pp > 1) {
    auto n = layers_per_stage_chunk(m, p);
    int idx = 0;
    for (int c = 0; c < p.vpp; ++c)
      for (int s = 0; s < p.pp; ++s) {
        if (!(c == 0 && s == 0)) {
          if (n[s][c] == 0 && !(c == p.vpp - 1 && s == p.pp - 1))
            e.push_back("a pipeline stage without layers cannot be expressed with torchtitan split points");
          splits.push_back("\"layers." + std::to_string(idx) + "\"");
        }
        idx += n[s][c];
      }
  }
  if (!e.empty()) return Error(e);

  std::ostringstream o;
  o << "# torchtitan job config for " << m.name << " on " << p.world_size << " x " << plan.cluster.gpu.name
    << " (written by mplan export; set [model] name/flavor to your model definition)\n";
  o << "[job]\ndescription = \"" << m.name << " tp" << p.tp << " pp" << p.pp << " cp" << p.cp << " dp" << p.dp() << "\"\n\n";
  o << "[model]\nname = \"" << m.name << "\"\nflavor = \"" << m.name << "\"\n";
  if (t.precision == Precision::fp8) o << "converters = [\"float8\"]\n";
  if (t.precision == Precision::mxfp8) o << "converters = [\"mx\"]\n";
  o << "\n[training]\n";
  // per data-parallel rank and step: the whole local batch when pipelining (it is split into
  // micro-batches), else one micro-batch (torchtitan accumulates gradients up to global_batch_size)
  o << "local_batch_size = " << (p.pp > 1 ? t.global_batch_size / p.dp() : p.micro_batch_size) << "\n";
  o << "global_batch_size = " << t.global_batch_size << "\n";
  o << "seq_len = " << t.seq_length << "\n";
  o << "mixed_precision_param = \"" << (t.precision == Precision::fp32 ? "float32" : "bfloat16") << "\"\n";
  o << "\n[parallelism]\n";
  bool fsdp = p.zero >= 2;
  o << "data_parallel_replicate_degree = " << (fsdp ? 1 : p.dp()) << "\n";
  o << "data_parallel_shard_degree = " << (fsdp ? p.dp() : 1) << "\n";
  if (p.zero == 2) o << "fsdp_reshard_after_forward = \"never\"\n";
  o << "tensor_parallel_degree = " << p.tp << "\n";
  if (p.tp_comm_overlap) o << "enable_async_tensor_parallel = true\n";
  o << "pipeline_parallel_degree = " << p.pp << "\n";
  if (p.pp > 1) {
    const char* sched = p.schedule == Schedule::interleaved ? "Interleaved1F1B" : p.schedule == Schedule::gpipe ? "GPipe" : "1F1B";
    o << "pipeline_parallel_schedule = \"" << sched << "\"\n";
    o << "pipeline_parallel_microbatch_size = " << p.micro_batch_size << "\n";
    o << "pipeline_parallel_split_points = [";
    for (size_t i = 0; i < splits.size(); ++i) o << (i ? ", " : "") << splits[i];
    o << "]\n";
  }
  o << "context_parallel_degree = " << p.cp << "\n";
  if (p.cp > 1) o << "context_parallel_rotate_method = \"" << (p.cp_comm_type == CpCommType::allgather ? "allgather" : "alltoall") << "\"\n";
  if (p.ep > 1) o << "expert_parallel_degree = " << p.ep << "\n";
  o << "\n[activation_checkpoint]\n";
  o << "mode = \"" << (p.recompute == Recompute::none ? "none" : p.recompute == Recompute::selective ? "selective" : "full") << "\"\n";
  if (p.recompute == Recompute::selective) o << "selective_ac_option = \"op\"\n";
  return o.str();
}

}  // namespace mplan
