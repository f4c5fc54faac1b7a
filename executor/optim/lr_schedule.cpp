// Warm-up + cosine learning-rate schedule.
#include "executor/optim/lr_schedule.h"

#include <cmath>

namespace mplan::exec {

float LrSchedule::at(int step) const {
  if (warmup_steps > 0 && step <= warmup_steps) return lr * float(step) / float(warmup_steps);
  if (step >= decay_steps) return min_lr;
  double span = double(decay_steps - warmup_steps);
  double progress = span > 0 ? double(step - warmup_steps) / span : 1.0;
  double cosine = 0.5 * (1.0 + std::cos(3.141592653589793 * progress));
  return float(min_lr + (lr - min_lr) * cosine);
}

}  // namespace mplan::exec
