// --fix/--max limits and the planner's layout rules (see constraints.h).
#include "planner/constraints.h"

#include <algorithm>
#include <tuple>

#include "core/framework_profile.h"
#include "core/megatron_rules.h"

namespace mplan::planner {

const std::vector<std::string>& numeric_keys() {
  static const std::vector<std::string> k = {"tp", "pp", "vpp", "cp", "ep", "etp", "dp", "mbs", "zero", "recompute_layers"};
  return k;
}
const std::vector<std::string>& choice_keys() {
  static const std::vector<std::string> k = {"sp", "tp_comm_overlap", "recompute", "schedule", "cp_comm", "moe_a2a_overlap"};
  return k;
}

std::optional<int> choice_code(const std::string& key, const std::string& v) {
  auto idx = [&](std::initializer_list<const char*> names) -> std::optional<int> {
    int i = 0;
    for (const char* n : names) {
      if (v == n) return i;
      ++i;
    }
    return std::nullopt;
  };
  if (key == "recompute") return idx({"none", "selective", "full"});
  if (key == "schedule") return idx({"gpipe", "1f1b", "interleaved", "zb"});
  if (key == "cp_comm") return idx({"p2p", "a2a", "allgather"});
  if (key == "sp" || key == "tp_comm_overlap" || key == "moe_a2a_overlap") {
    if (v == "on" || v == "true" || v == "1") return 1;
    if (v == "off" || v == "false" || v == "0") return 0;
  }
  return std::nullopt;
}

namespace {
bool contains(const std::vector<std::string>& v, const std::string& k) { return std::find(v.begin(), v.end(), k) != v.end(); }
std::string kv(const char* flag, const std::string& k, int v) { return std::string(flag) + " " + k + "=" + std::to_string(v); }
}  // namespace

Status check_limits(const std::map<std::string, int>& fix, const std::map<std::string, int>& max, int gpus) {
  std::vector<std::string> e;
  for (const auto& [k, v] : fix) {
    if (!contains(numeric_keys(), k) && !contains(choice_keys(), k))
      e.push_back("--fix " + k +
                  ": unknown key; use tp, pp, vpp, cp, ep, etp, dp, mbs, zero, recompute_layers, sp, "
                  "tp_comm_overlap, moe_a2a_overlap, recompute, schedule or cp_comm");
    else if (contains(numeric_keys(), k) && k != "zero" && k != "recompute_layers" && v < 1)
      e.push_back(kv("--fix", k, v) + " must be >= 1");
    else if ((k == "zero" && (v < 0 || v > 3)) || (k == "recompute_layers" && v < 0))
      e.push_back(kv("--fix", k, v) + " is out of range");
  }
  for (const auto& [k, v] : max) {
    if (!contains(numeric_keys(), k))
      e.push_back("--max " + k + ": unknown key; use tp, pp, vpp, cp, ep, etp, dp, mbs, zero or recompute_layers");
    else if (v < (k == "zero" || k == "recompute_layers" ? 0 : 1))
      e.push_back(kv("--max", k, v) + " leaves no value to search");
  }
  for (const auto& [k, v] : fix) {
    auto m = max.find(k);
    if (m != max.end() && v > m->second) e.push_back(kv("--fix", k, v) + " conflicts with " + kv("--max", k, m->second));
  }
  auto f = [&](const char* k) -> std::optional<int> {
    auto it = fix.find(k);
    return it == fix.end() ? std::nullopt : std::optional<int>(it->second);
  };
  // products over the GPUs
  int64_t prod = 1;
  std::string names;
  for (const char* k : {"tp", "pp", "cp", "dp"})
    if (auto v = f(k); v && *v > 0) {
      prod *= *v;
      names += std::string(names.empty() ? "" : ",") + k + "=" + std::to_string(*v);
    }
  bool all4 = f("tp") && f("pp") && f("cp") && f("dp");
  if (gpus > 0 && prod > 0 && ((all4 && prod != gpus) || (!all4 && gpus % prod != 0)))
    e.push_back("--fix " + names + " cannot tile " + std::to_string(gpus) + " GPUs: tp*pp*cp*dp must equal the GPU count");
  // pairwise contradictions inside --fix
  auto both = [&](bool c, const std::string& msg) {
    if (c) e.push_back("--fix " + msg);
  };
  both(f("sp") == 1 && f("tp") == 1, "sp=on contradicts tp=1 (sequence parallel needs tp > 1)");
  both(f("tp_comm_overlap") == 1 && f("sp") == 0, "tp_comm_overlap=on contradicts sp=off (the overlap needs sequence parallel)");
  both(f("tp_comm_overlap") == 1 && f("tp") == 1, "tp_comm_overlap=on contradicts tp=1");
  both(f("vpp").value_or(1) > 1 && f("pp") == 1,
       "vpp=" + std::to_string(f("vpp").value_or(1)) + " contradicts pp=1 (interleaving needs pp > 1)");
  both(f("schedule") == 2 && f("vpp") == 1, "schedule=interleaved contradicts vpp=1");
  both(f("schedule") && f("schedule") != 2 && f("vpp").value_or(1) > 1, "vpp > 1 needs schedule=interleaved");
  both(f("recompute_layers").value_or(0) > 0 && f("recompute") && f("recompute") != 2, "recompute_layers needs recompute=full");
  both(f("schedule") == 3 && f("pp") == 1, "schedule=zb contradicts pp=1");
  both(f("ep").value_or(1) > 1 && f("dp") && f("tp") && f("cp") &&
           (int64_t(*f("tp")) * *f("cp") * *f("dp")) % (int64_t(f("ep").value_or(1)) * f("etp").value_or(1)) != 0,
       "ep*etp must divide tp*cp*dp");
  for (const auto& [k, v] : fix)
    if (contains(choice_keys(), k) && (v < 0 || v > (k == "recompute" || k == "cp_comm" ? 2 : k == "schedule" ? 3 : 1)))
      e.push_back(kv("--fix", k, v) + " is not a valid choice");
  return Status::from(e);
}

Status check_framework_limits(const std::map<std::string, int>& fix, Framework fw) {
  std::vector<std::string> e;
  const FrameworkRuns r = framework_runs(fw);
  const std::string by = " (--framework " + to_string(fw) + ")";
  auto f = [&](const char* k) -> std::optional<int> {
    auto it = fix.find(k);
    return it == fix.end() ? std::nullopt : std::optional<int>(it->second);
  };
  for (auto [key, has, what] :
       {std::tuple{"tp", r.tensor_parallel, "tensor parallelism"}, std::tuple{"pp", r.pipeline_parallel, "pipeline parallelism"},
        std::tuple{"vpp", r.pipeline_parallel, "pipeline parallelism"},
        std::tuple{"cp", r.context_parallel, "context parallelism"}})
    if (f(key).value_or(1) > 1 && !has)
      e.push_back("--fix " + std::string(key) + "=" + std::to_string(*f(key)) + ": " + to_string(fw) + " has no " + what + by);
  if (f("vpp").value_or(1) > 1 && r.pipeline_parallel && !((r.schedules >> unsigned(Schedule::interleaved)) & 1u))
    e.push_back("--fix vpp=" + std::to_string(*f("vpp")) + ": " + to_string(fw) + " has no interleaved schedule (it runs " +
                schedule_names(fw) + ")" + by);
  if (auto sc = f("schedule"); sc && *sc >= 0 && *sc <= 3) {
    const Schedule s = Schedule(*sc);
    const bool pipelined = f("pp").value_or(2) > 1;  // schedule=1f1b also names "no pipeline" at pp = 1
    if (pipelined && !(r.schedules & (1u << unsigned(s))) && !(s == Schedule::one_f_one_b && !r.pipeline_parallel))
      e.push_back("--fix schedule=" + to_string(s) + ": " + to_string(fw) + " runs the pipeline schedules " + schedule_names(fw) +
                  by);
  }
  if (auto c = f("cp_comm"); c && *c >= 0 && *c <= 2 && f("cp").value_or(2) > 1 && !runs_cp_comm(fw, CpCommType(*c)))
    e.push_back("--fix cp_comm=" + to_string(CpCommType(*c)) + ": " + to_string(fw) + " exchanges context-parallel K/V by " +
                cp_comm_names(fw) + by);
  if (auto z = f("zero"); z && *z >= 0 && *z <= 3) {  // the profile's own message ("zero=1: framework torchtitan has zero 0, 3")
    TrainingSpec t;
    t.framework = fw;
    ParallelConfig p;
    p.zero = *z;
    if (std::string no = framework_refusal(t, p); !no.empty()) e.push_back("--fix " + no + by);
  }
  return Status::from(e);
}

Job::Job(const Plan& p) : plan(&p), world(p.parallel.world_size) {
  domain = std::max(1, p.cluster.placement_domain());
  units = p.model.num_layers + 2 + 2 * p.model.mtp_num_layers;
  mla = p.model.mla.has_value();
  moe = p.model.moe.has_value();
}

std::optional<const char*> megatron_rule(const Job& job, const Layout& l) {
  const Plan& pl = *job.plan;
  if (!framework_profile(pl.training.framework).megatron_core_rules) return std::nullopt;
  const Precision prec = pl.training.precision;
  if (!megatron_fp8_tp_problem(pl.model, prec, l.tp).empty() || !megatron_fp8_etp_problem(pl.model, prec, l.etp).empty() ||
      !megatron_fp8_tokens_ok(prec, l.mbs, job.seq(), l.cp, l.tp, l.sp && l.tp > 1))
    return rule::fp8_shape;
  if (l.cp > 1 && pl.parallel.attention_backend == AttentionBackend::unfused) return rule::cp_unfused;
  if (l.cp > 1 && !megatron_cp_comm_ok(pl.model, l.cp_comm)) return rule::cp_attention;
  return std::nullopt;
}

bool framework_runs_layout(const Job& job, const Layout& l) {
  const Framework fw = job.plan->training.framework;
  const FrameworkRuns r = framework_runs(fw);
  if ((l.tp > 1 && !r.tensor_parallel) || (l.cp > 1 && !runs_cp_comm(fw, l.cp_comm))) return false;
  if (l.pp > 1 && (!runs_schedule(fw, l.schedule, l.pp, l.vpp) || (l.pipe != PipeLayout::even && !r.uneven_pipeline)))
    return false;
  if (l.pp > 1 && r.microbatches_multiple_of_pp && (job.gbs() / (int64_t(l.mbs) * l.dp)) % l.pp != 0) return false;
  return (framework_memory(fw).zero_levels >> l.zero) & 1u;
}

std::optional<const char*> first_broken_rule(const Job& job, const Layout& l, bool allow_tp_across_nvlink, bool planner_rules) {
  const ModelSpec& m = job.model();
  if (planner_rules && !allow_tp_across_nvlink && l.tp > job.domain) return rule::tp_nvlink;
  if (m.num_attention_heads % l.tp != 0) return rule::tp_heads;
  if (!job.mla && m.num_query_groups % l.tp != 0) return rule::tp_groups;
  if (m.ffn_hidden_size % l.tp != 0) return rule::tp_ffn;
  if (l.cp > 1 && job.seq() % (2 * int64_t(l.cp)) != 0) return rule::cp_seq;
  if (l.sp && job.seq() % (int64_t(l.tp) * l.cp) != 0) return rule::sp_seq;
  if (planner_rules && l.cp > 1 && l.cp_comm == CpCommType::a2a &&
      ((m.num_attention_heads / l.tp) % l.cp != 0 || (!job.mla && (m.num_query_groups / l.tp) % l.cp != 0)))
    return rule::cp_a2a;
  if (job.moe) {
    if (m.moe->num_experts % l.ep != 0) return rule::ep_experts;
    if ((int64_t(l.tp) * l.cp * l.dp) % (int64_t(l.ep) * l.etp) != 0) return rule::ep_tiling;
    if (m.moe->moe_ffn_hidden_size % l.etp != 0) return rule::etp_ffn;
    if (m.add_bias_linear && l.etp > 1) return rule::etp_bias;
  }
  if (l.vpp > 1 && l.pp == 1) return rule::vpp_pp;
  if (l.pipe == PipeLayout::even && l.pp * l.vpp > m.num_layers) return rule::chunks;
  if (planner_rules && l.pipe == PipeLayout::balanced && l.pp * l.vpp > job.units) return rule::chunks;
  if (l.pipe == PipeLayout::even && (m.num_layers % l.pp != 0 || (m.num_layers / l.pp) % l.vpp != 0)) return rule::layers_split;
  if (l.pipe == PipeLayout::first_last) {  // the middle stages split the rest evenly; every stage divides by vpp
    int rest = m.num_layers - l.first_layers - l.last_layers, middle = l.pp - 2;
    if (l.pp < 2 || l.first_layers < l.vpp || l.last_layers < l.vpp || l.first_layers % l.vpp || l.last_layers % l.vpp ||
        (middle == 0 ? rest != 0 : rest < middle * l.vpp || rest % middle || (rest / middle) % l.vpp))
      return rule::layers_split;
  }
  if (job.gbs() % (int64_t(l.mbs) * l.dp) != 0) return rule::gbs_dp;
  if (l.vpp > 1 && (job.gbs() / (int64_t(l.mbs) * l.dp)) % l.pp != 0) return rule::interleaved_m;
  if (auto r = megatron_rule(job, l)) return r;
  if (planner_rules && !framework_runs_layout(job, l)) return rule::framework;
  return std::nullopt;
}

Status check_search_job(const Plan& job, const std::map<std::string, int>& fix, const std::map<std::string, int>& max) {
  const int world = job.parallel.world_size;
  std::vector<std::string> e;
  if (world < 1)
    e.push_back("the job needs at least one GPU (parallel.world_size)");
  else if (world > job.cluster.max_gpus())
    e.push_back("cluster too small: " + std::to_string(world) + " GPUs requested but cluster '" + job.cluster.name + "' has " +
                std::to_string(job.cluster.max_gpus()));
  if (job.model.is_hybrid())
    e.push_back("model '" + job.model.name +
                "' is a hybrid (hybrid_override_pattern): the search's bounds know transformer layers only; "
                "predict its layouts one by one with `mplan simulate`");
  if (job.training.global_batch_size < 1) e.push_back("global batch size must be >= 1");
  if (job.training.seq_length < 1) e.push_back("sequence length must be >= 1");
  if (!job.cluster.gpu.peak(job.training.precision))
    e.push_back("precision " + std::string(to_string(job.training.precision)) + " is not supported by " + job.cluster.gpu.name +
                " (cluster.gpu.peak_tflops has no entry for it)");
  if (auto s = check_limits(fix, max, world); !s.ok())
    for (const auto& p : s.error().problems) e.push_back(p);
  if (auto s = check_framework_limits(fix, job.training.framework); !s.ok())
    for (const auto& p : s.error().problems) e.push_back(p);
  if (!e.empty()) return Error(e);
  return {};
}

}  // namespace mplan::planner
