// Pipeline schedules as data: (pp, vpp, microbatches, stage) -> the ordered actions one pipeline
// rank performs. The simulator simulates exactly these lists and the executor executes them.
#pragma once
#include <string>
#include <vector>

#include "core/parallel_config.h"

namespace mplan {

enum class Phase : char {
  F = 'F',  // forward of one micro-batch through one model chunk
  B = 'B',  // backward: input gradient; also the weight gradient unless a W follows (zero-bubble)
  W = 'W',  // weight gradient only (zero-bubble schedules)
};

struct Action {
  Phase phase;
  int microbatch;
  int chunk;  // virtual pipeline chunk (0 when vpp = 1)
  bool operator==(const Action& o) const { return phase == o.phase && microbatch == o.microbatch && chunk == o.chunk; }
};

// The action list of `stage` (0 = first pipeline stage). Requirements (checked by validate_layout):
// interleaved needs vpp > 1 and microbatches % pp == 0.
std::vector<Action> schedule_actions(Schedule s, int pp, int vpp, int microbatches, int stage);
// True when B of this schedule computes only the input gradient (a separate W follows).
bool schedule_splits_weight_grad(Schedule s);
// Compact text form "F0.0 F1.0 B0.0 ..." (microbatch.chunk) for tests and debugging.
std::string format_actions(const std::vector<Action>& a);

// Number of micro-batches whose forward activations are held at once at most on `stage`
// (in chunk-forward units, i.e. per-chunk activations), computed from the list itself.
int max_in_flight(const std::vector<Action>& actions);

}  // namespace mplan
