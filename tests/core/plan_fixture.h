// A preset plan for tests of every layer (core, simulator, fuzz entry points, GUI): a model preset on
// dgx-h100 in bf16 with the given layout (used through tests/simulator/sim_fixtures.h by the
// simulator suites). Depends on core only.
#pragma once
#include "core/plan.h"
#include "core/presets.h"

namespace mplan {

// A preset model on dgx-h100 (bf16) with tp (sequence parallel when > 1), pp, vpp (interleaved
// when > 1) and ep; the rest at the defaults.
inline Plan preset_plan(const char* model, int gpus, int64_t gbs, int64_t seq, int tp, int pp, int vpp = 1, int ep = 1) {
  Plan p;
  p.model = *model_preset(model);
  p.cluster = *cluster_preset("dgx-h100");
  p.training = {gbs, seq, Precision::bf16};
  p.parallel.world_size = gpus;
  p.parallel.tp = tp;
  p.parallel.sp = tp > 1;
  p.parallel.pp = pp;
  p.parallel.vpp = vpp;
  p.parallel.ep = ep;
  p.parallel.schedule = vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  return p;
}

}  // namespace mplan
