// The warm-up rule shared by every import: which logged measurements include start-up iterations.
#pragma once
#include <cstdint>
#include <vector>

namespace mplan::runs {

struct WarmupFlags {
  std::vector<bool> warmup;       // per measurement
  std::vector<int64_t> first;     // per measurement: the first iteration it averages over
  std::vector<int64_t> restarts;  // iterations where a new segment (restart) begins
};

// A measurement at iteration i averages over the iterations since the previous measurement. The
// first measurement of a segment covers the log interval L before it (L = the most frequent step
// between measurements) when i is a multiple of L — the usual `iteration % log_interval == 0` — and
// only itself otherwise (Megatron-LM's line for iteration 1, a CSV starting mid-run).
//
// A measurement is warm-up when its iterations include any of the first `warmup_iters` iterations
// of its segment. A segment starts at the first measurement and again whenever the iteration does
// not increase or `restart[i]` is set (a resumed job appended to the same log; may be empty).
WarmupFlags flag_warmup(const std::vector<int64_t>& iterations, int warmup_iters, const std::vector<bool>& restart = {});

}  // namespace mplan::runs
