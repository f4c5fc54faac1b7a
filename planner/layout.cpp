// Layout <-> ParallelConfig and the short layout names used in messages.
#include "planner/layout.h"

#include "core/parallel_fields.h"

namespace mplan::planner {

void copy_job_runtime(ParallelConfig& dst, const ParallelConfig& job) { copy_fields(dst, job, FieldScope::job); }

ParallelConfig to_parallel(const Layout& l, const ModelSpec& m, int world, const ParallelConfig& job) {
  ParallelConfig p;
  copy_job_runtime(p, job);
  p.world_size = world;
  p.tp = l.tp;
  p.sp = l.sp != 0;
  p.pp = l.pp;
  p.vpp = l.vpp;
  p.cp = l.cp;
  p.cp_comm_type = l.cp_comm;
  p.ep = l.ep;
  p.etp = l.etp;
  p.zero = l.zero;
  p.micro_batch_size = l.mbs;
  p.recompute = l.recompute;
  p.recompute_num_layers = l.recompute_layers;
  p.tp_comm_overlap = l.overlap != 0;
  p.schedule = l.schedule;
  if (l.recompute == Recompute::selective) p.recompute_modules.bits = l.rmods;
  p.offload_modules.bits = l.offload;
  p.moe_a2a_overlap = l.a2a != 0;
  if (l.pipe == PipeLayout::balanced) p.pipeline_layout = balanced_pipeline_layout(m, l.pp, l.vpp);
  if (l.pipe == PipeLayout::first_last) {
    p.num_layers_in_first_pipeline_stage = l.first_layers;
    p.num_layers_in_last_pipeline_stage = l.last_layers;
  }
  return p;
}

Layout from_parallel(const ParallelConfig& p) {
  Layout l;
  l.tp = p.tp;
  l.sp = p.sp ? 1 : 0;
  l.pp = p.pp;
  l.vpp = p.vpp;
  l.cp = p.cp;
  l.cp_comm = p.cp_comm_type;
  l.ep = p.ep;
  l.etp = p.etp;
  l.dp = p.dp();
  l.zero = p.zero;
  l.mbs = p.micro_batch_size;
  l.recompute = p.recompute;
  l.recompute_layers = p.recompute_num_layers;
  l.rmods = p.recompute == Recompute::selective ? p.recompute_modules.bits : 0;
  l.offload = p.offload_modules.bits;
  l.a2a = p.moe_a2a_overlap ? 1 : 0;
  l.overlap = p.tp_comm_overlap ? 1 : 0;
  l.schedule = p.schedule;
  l.pipe = p.pipeline_layout.empty() ? PipeLayout::even : PipeLayout::balanced;
  if (p.pipeline_layout.empty() && (p.num_layers_in_first_pipeline_stage || p.num_layers_in_last_pipeline_stage)) {
    l.pipe = PipeLayout::first_last;
    l.first_layers = int16_t(p.num_layers_in_first_pipeline_stage);
    l.last_layers = int16_t(p.num_layers_in_last_pipeline_stage);
  }
  return l;
}

std::string short_name(const Layout& l) {
  std::string s = "tp" + std::to_string(l.tp) + (l.sp ? " sp" : "") + (l.overlap ? " tpov" : "") + " pp" + std::to_string(l.pp);
  if (l.vpp > 1) s += " vpp" + std::to_string(l.vpp);
  if (l.pipe == PipeLayout::balanced) s += " (balanced)";
  if (l.pipe == PipeLayout::first_last)
    s += " (first " + std::to_string(l.first_layers) + ", last " + std::to_string(l.last_layers) + " layers)";
  s += " dp" + std::to_string(l.dp);
  if (l.cp > 1) s += " cp" + std::to_string(l.cp) + "/" + to_string(l.cp_comm);
  if (l.ep > 1 || l.etp > 1) s += " ep" + std::to_string(l.ep) + " etp" + std::to_string(l.etp);
  s += " zero" + std::to_string(l.zero) + " mbs" + std::to_string(l.mbs) + " " + to_string(l.recompute);
  if (l.recompute_layers) s += "(" + std::to_string(l.recompute_layers) + ")";
  if (l.rmods) s += "(" + join_names(to_names(RecomputeModules{l.rmods})) + ")";
  if (l.offload) s += " offload(" + join_names(to_names(OffloadModules{l.offload})) + ")";
  s += " " + to_string(l.schedule);
  if (l.a2a) s += " a2a-overlap";
  return s;
}

}  // namespace mplan::planner
