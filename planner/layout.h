// The planner's compact layout: one candidate of the search space as small integers (cheap to copy,
// sort and compare), its total order (ties in the ranking are broken by it, so results never depend
// on thread timing), and its conversion to the ParallelConfig the simulator reads.
#pragma once
#include <cstdint>
#include <string>
#include <tuple>

#include "core/model_spec.h"
#include "core/parallel_config.h"

namespace mplan::planner {

// even: layers / pp per stage; balanced: balanced_pipeline_layout() (Megatron's account for the
// embedding and the loss); first_last: Layout::first_layers / last_layers on the first and last
// stage, the rest even (Megatron's --decoder-first/last-pipeline-num-layers; planner/space.h).
enum class PipeLayout : uint8_t { even, balanced, first_last };

struct Layout {
  int tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1, dp = 1, mbs = 1;
  int zero = 1;
  int recompute_layers = 0;     // full recompute: first k layers of each chunk (0 = all)
  uint8_t sp = 0, overlap = 0;  // sequence parallel, tp_comm_overlap
  Recompute recompute = Recompute::none;
  Schedule schedule = Schedule::one_f_one_b;
  CpCommType cp_comm = CpCommType::p2p;
  PipeLayout pipe = PipeLayout::even;
  int16_t first_layers = 0, last_layers = 0;  // pipe == first_last only
  uint32_t rmods = 0;    // recompute == selective: Megatron's --recompute-modules (0 = its default, core_attn)
  uint32_t offload = 0;  // fine-grained activation offloading modules (OffloadModules bits)
  uint8_t a2a = 0;       // moe_a2a_overlap: EP all-to-alls beside another micro-batch's compute

  auto key() const {
    return std::make_tuple(tp, sp, pp, vpp, int(pipe), first_layers, last_layers, cp, int(cp_comm), ep, etp, zero, mbs,
                           int(recompute), recompute_layers, rmods, offload, int(schedule), overlap, a2a);
  }
  bool operator<(const Layout& o) const { return key() < o.key(); }
  bool operator==(const Layout& o) const { return key() == o.key(); }
};

// The ParallelConfig of `l` for a job of `world` GPUs, with the job's runtime options (copy_job_runtime).
ParallelConfig to_parallel(const Layout& l, const ModelSpec& m, int world, const ParallelConfig& job);
// The options every candidate inherits from the job rather than the search: attention kernel, MoE
// dispatcher, routing and capacity, fp8 parameter storage, gradient and optimizer dtypes, fused loss,
// hybrid sharding. The one place the planner's probes, candidates and bounds take them from.
void copy_job_runtime(ParallelConfig& dst, const ParallelConfig& job);
// The Layout of a ParallelConfig (pipe = balanced when it carries an explicit pipeline_layout,
// first_last when it gives first/last-stage layer counts).
Layout from_parallel(const ParallelConfig& p);
// "tp8 sp pp16 vpp8 cp1 dp128 zero1 mbs1 none 1f1b" for messages.
std::string short_name(const Layout& l);

}  // namespace mplan::planner
