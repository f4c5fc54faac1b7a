// Layout <-> ParallelConfig and the short layout names used in messages.
#include "planner/layout.h"

#include <type_traits>

#include "core/parallel_fields.h"

namespace mplan::planner {

namespace {
// The members a Layout and a ParallelConfig both hold, once, for both directions: f(layout member,
// plan member) for each pair (the pipeline split and the module sets, which depend on other members,
// are mapped by the callers).
template <class F>
void each_shared_member(F&& f) {
  f(&Layout::tp, &ParallelConfig::tp);
  f(&Layout::sp, &ParallelConfig::sp);
  f(&Layout::pp, &ParallelConfig::pp);
  f(&Layout::vpp, &ParallelConfig::vpp);
  f(&Layout::cp, &ParallelConfig::cp);
  f(&Layout::cp_comm, &ParallelConfig::cp_comm_type);
  f(&Layout::ep, &ParallelConfig::ep);
  f(&Layout::etp, &ParallelConfig::etp);
  f(&Layout::zero, &ParallelConfig::zero);
  f(&Layout::mbs, &ParallelConfig::micro_batch_size);
  f(&Layout::recompute, &ParallelConfig::recompute);
  f(&Layout::recompute_layers, &ParallelConfig::recompute_num_layers);
  f(&Layout::overlap, &ParallelConfig::tp_comm_overlap);
  f(&Layout::schedule, &ParallelConfig::schedule);
  f(&Layout::a2a, &ParallelConfig::moe_a2a_overlap);
}
}  // namespace

void copy_job_runtime(ParallelConfig& dst, const ParallelConfig& job) { copy_fields(dst, job, FieldScope::job); }

ParallelConfig to_parallel(const Layout& l, const ModelSpec& m, int world, const ParallelConfig& job) {
  ParallelConfig p;
  copy_job_runtime(p, job);
  p.world_size = world;
  each_shared_member([&](auto lm, auto pm) { p.*pm = static_cast<std::remove_reference_t<decltype(p.*pm)>>(l.*lm); });
  if (l.recompute == Recompute::selective) p.recompute_modules.bits = l.rmods;
  p.offload_modules.bits = l.offload;
  if (l.pipe == PipeLayout::balanced) p.pipeline_layout = balanced_pipeline_layout(m, l.pp, l.vpp);
  if (l.pipe == PipeLayout::first_last) {
    p.num_layers_in_first_pipeline_stage = l.first_layers;
    p.num_layers_in_last_pipeline_stage = l.last_layers;
  }
  return p;
}

Layout from_parallel(const ParallelConfig& p) {
  Layout l;
  each_shared_member([&](auto lm, auto pm) { l.*lm = static_cast<std::remove_reference_t<decltype(l.*lm)>>(p.*pm); });
  l.dp = p.dp();
  l.rmods = p.recompute == Recompute::selective ? p.recompute_modules.bits : 0;
  l.offload = p.offload_modules.bits;
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
