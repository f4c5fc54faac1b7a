// Tables for a StepReport: summary, time breakdown, per-stage memory, top ops, warnings.
#include "cli/simulate_output.h"

#include <sstream>

#include "cli/table.h"

namespace mplan::cli {

std::string layout_summary(const ParallelConfig& p) {
  std::ostringstream s;
  s << "tp " << p.tp << (p.sp ? " (sp)" : "") << ", pp " << p.pp;
  if (p.vpp > 1) s << " x vpp " << p.vpp;
  s << ", dp " << p.dp();
  if (p.cp > 1) s << ", cp " << p.cp << " (" << to_string(p.cp_comm_type) << ")";
  if (p.ep > 1 || p.etp > 1) s << ", ep " << p.ep << ", etp " << p.etp;
  s << ", zero " << p.zero << ", mbs " << p.micro_batch_size << ", recompute " << to_string(p.recompute);
  if (p.recompute_num_layers) s << " (" << p.recompute_num_layers << " layers)";
  s << ", " << to_string(p.schedule);
  if (p.tp_comm_overlap) s << ", tp-comm-overlap";
  if (p.moe_dispatcher != MoeDispatcher::alltoall) s << ", " << to_string(p.moe_dispatcher);
  if (p.moe_force_balance) s << ", forced MoE balance";
  if (p.moe_a2a_overlap) s << ", EP a2a overlap";
  return s.str();
}

nlohmann::json fits_with_json(const std::optional<FitsWith>& f) {
  if (!f) return nullptr;
  return {{"option", f->option}, {"step_time_s", f->step_time_s}, {"peak_memory_gib", f->peak_memory_gib}};
}

std::string render_report_table(const Plan& plan, const StepReport& r, const std::optional<FitsWith>* fits_with) {
  std::ostringstream out;
  const auto& t = plan.training;
  out << plan.model.name << " on " << plan.parallel.world_size << " x " << plan.cluster.gpu.name << " (" << plan.cluster.name
      << "), global batch " << t.global_batch_size << " x seq " << t.seq_length << ", " << to_string(t.precision) << "\n";
  out << "layout: " << layout_summary(plan.parallel) << "; " << r.num_microbatches << " micro-batches\n\n";
  TextTable s({"metric", "value"});
  s.left_align(1);
  const bool iv = r.step_time_s_interval.second > 0;
  s.add_row({"step time", fmt(r.step_time_s, 3) + " s" +
                              (iv ? " (80% interval " + fmt(r.step_time_s_interval.first, 3) + "-" +
                                        fmt(r.step_time_s_interval.second, 3) + ")"
                                  : "")});
  s.add_row({"tokens/s per GPU",
             fmt(r.tokens_per_s_per_gpu, 0) + (iv ? " (80% interval " + fmt(r.tokens_per_s_per_gpu_interval.first, 0) + "-" +
                                                        fmt(r.tokens_per_s_per_gpu_interval.second, 0) + ")"
                                                  : "")});
  s.add_row({"model TFLOP/s per GPU", fmt(r.model_tflops_per_gpu, 1)});
  s.add_row({"MFU", fmt_pct(r.mfu) + " (full-attention FLOPs: " + fmt_pct(r.mfu_full_attention) + ")"});
  s.add_row({"peak memory",
             fmt(r.peak_memory_gib, 1) + " / " + fmt(r.capacity_gib, 1) + " GiB" + (r.fits ? " (fits)" : " (DOES NOT FIT)")});
  if (!r.fits && fits_with)
    s.add_row({"fits with", *fits_with ? (*fits_with)->option + ": step " + fmt((*fits_with)->step_time_s, 3) + " s, peak " +
                                             fmt((*fits_with)->peak_memory_gib, 1) + " GiB"
                                       : "no memory option of this framework makes the layout fit (change the layout)"});
  std::string bubble = fmt_pct(r.bubble_fraction);
  if (r.bottleneck_stage >= 0 && r.step_time_s > 0)
    bubble += " (fill/drain " + fmt_pct(r.bubble_fill_drain_s / r.step_time_s) + ", stage imbalance " +
              fmt_pct(r.bubble_imbalance_s / r.step_time_s) + "; bottleneck: stage " + std::to_string(r.bottleneck_stage) + ")";
  s.add_row({"pipeline bubble", bubble});
  out << s.render() << "\n";
  TextTable b(
      {"time breakdown (critical rank" + (r.per_stage.size() > 1 ? ": stage " + std::to_string(r.critical_stage) : "") + ")",
       "seconds", "share"});
  auto row = [&](const char* n, double v) {
    if (v > 0 || std::string(n) == "compute") b.add_row({n, fmt(v, 4), fmt_pct(r.step_time_s > 0 ? v / r.step_time_s : 0)});
  };
  row("compute", r.time.compute);
  row("recompute", r.time.recompute);
  row("tp comm exposed", r.time.tp_comm_exposed);
  row("cp comm exposed", r.time.cp_comm_exposed);
  row("ep comm exposed", r.time.ep_comm_exposed);
  row("dp comm exposed", r.time.dp_comm_exposed);
  row("pp p2p exposed", r.time.pp_p2p_exposed);
  row("offload exposed", r.time.offload_exposed);
  row("bubble: fill/drain", r.bubble_fill_drain_s);
  row("bubble: stage imbalance", r.bubble_imbalance_s);
  row("optimizer", r.time.optimizer);
  out << b.render() << "\n";
  if (!r.critical_by_kind.empty()) {
    TextTable cp({"critical path (" + std::to_string(r.critical_path.size()) + " events), by kind", "seconds", "share"});
    size_t shown = 0;
    for (const auto& k : r.critical_by_kind) {
      if (shown++ == 8) {
        cp.add_row({"... " + std::to_string(r.critical_by_kind.size() - 8) + " more", "", ""});
        break;
      }
      cp.add_row({k.kind, fmt(k.time_s, 4), fmt_pct(k.share)});
    }
    out << cp.render() << "\n";
  }
  TextTable st({"stage", "layers", "memory GiB", "weights", "grads", "optim", "activations", "other", "busy s", "in flight"});
  for (const auto& x : r.per_stage)
    st.add_row({std::to_string(x.stage), std::to_string(x.layers), fmt(x.memory_gib, 1), fmt(x.memory.weights, 1),
                fmt(x.memory.gradients, 1), fmt(x.memory.optimizer, 1), fmt(x.memory.activations, 1),
                fmt(x.memory.other + x.memory.comm_buffers, 1), fmt(x.busy_s, 3), std::to_string(x.max_microbatches_in_flight)});
  out << st.render();
  if (!r.ops.empty()) {
    out << "\n";
    TextTable ot({"top ops (critical rank, per step)", "seconds", "calls"});
    for (size_t i = 0; i < r.ops.size() && i < 8; ++i)
      ot.add_row({r.ops[i].name, fmt(r.ops[i].time_s, 4), std::to_string(r.ops[i].calls)});
    out << ot.render();
  }
  if (!r.warnings.empty()) {
    out << "\nwarnings:\n";
    for (const auto& w : r.warnings) out << "  - " << w << "\n";
  }
  return out.str();
}

}  // namespace mplan::cli
