// PipelineEngine: executes one rank's action list from core/schedule.h (GPipe, 1F1B, interleaved
// 1F1B, zero-bubble ZB-H1) over its model chunks. Activations go forward and gradients backward by
// point-to-point messages on the pp group (pp_send_recv): sends are non-blocking, receives block, so
// any valid schedule runs without deadlock. Chunk c of stage s feeds stage s+1, and the last stage's
// chunk c feeds stage 0's chunk c+1 (Megatron's interleaving).
#pragma once
#include <functional>
#include <map>
#include <vector>

#include "core/schedule.h"
#include "executor/model/chunk.h"

namespace mplan::exec {

class PipelineEngine {
 public:
  PipelineEngine(const ParallelConfig& p, int stage, int microbatches);

  const std::vector<Action>& actions() const { return actions_; }

  // Runs every action of one step. `make_micro(mb)` builds a micro-batch's tokens; `dloss` is the
  // gradient of each token's loss; summed token losses of the head chunk go to *loss_sum.
  void run(Exec& ex, std::vector<ModelChunk>& chunks, const std::function<Micro(int)>& make_micro, float dloss, double* loss_sum);

 private:
  int pp_, vpp_, stage_;
  bool split_w_;
  std::vector<Action> actions_;
};

}  // namespace mplan::exec
