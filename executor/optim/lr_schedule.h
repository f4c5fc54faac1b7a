// Learning-rate schedule: linear warm-up then cosine decay to min_lr (Megatron's "cosine" style).
#pragma once

namespace mplan::exec {

struct LrSchedule {
  float lr = 1e-3f;
  float min_lr = 1e-4f;
  int warmup_steps = 0;
  int decay_steps = 1;  // step at which the cosine reaches min_lr (usually the run's total steps)
  // Learning rate of optimizer step `step` (1-based).
  float at(int step) const;
};

}  // namespace mplan::exec
