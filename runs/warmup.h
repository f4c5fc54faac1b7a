// The warm-up rule shared by every import: which logged measurements include start-up iterations.
#pragma once
#include <cstdint>
#include <vector>

namespace mplan::runs {

// How far back a logged measurement reaches.
enum class IntervalStyle {
  // Megatron-LM: a line at iteration i averages over the iterations since the previous line; the
  // first line of a (re)start covers the log interval before it when i is a multiple of the
  // interval (the usual `iteration % log_interval == 0`), else only itself (the first-iteration line).
  megatron,
  // One row per step: a row's interval is the steps since the previous row, the first row itself.
  rows,
};

struct WarmupFlags {
  std::vector<bool> warmup;       // per measurement
  std::vector<int64_t> restarts;  // iterations where a new segment (restart) begins
};

// A measurement is warm-up when the interval it averages over includes any of the first
// `warmup_iters` iterations of its segment. A segment starts at the first measurement and again
// whenever the iteration number does not increase or `restart[i]` is set (a resumed job appended to
// the same log; `restart` may be empty).
WarmupFlags flag_warmup(const std::vector<int64_t>& iterations, int warmup_iters, IntervalStyle style,
                        const std::vector<bool>& restart = {});

}  // namespace mplan::runs
