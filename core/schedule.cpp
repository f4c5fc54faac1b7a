// Schedule tables: GPipe, 1F1B (PipeDream-flush), Megatron's interleaved 1F1B and ZB-H1 zero bubble.
#include "core/schedule.h"

#include <algorithm>
#include <deque>

namespace mplan {

namespace {

std::vector<Action> gpipe(int m) {
  std::vector<Action> a;
  for (int i = 0; i < m; ++i) a.push_back({Phase::F, i, 0});
  for (int i = 0; i < m; ++i) a.push_back({Phase::B, i, 0});
  return a;
}

// PipeDream-flush 1F1B: pp-stage-1 warm-up forwards, then one forward one backward, then cool-down.
std::vector<Action> one_f_one_b(int pp, int m, int stage) {
  std::vector<Action> a;
  int warmup = std::min(pp - stage - 1, m);
  int f = 0, b = 0;
  for (; f < warmup; ++f) a.push_back({Phase::F, f, 0});
  while (f < m) {
    a.push_back({Phase::F, f++, 0});
    a.push_back({Phase::B, b++, 0});
  }
  while (b < m) a.push_back({Phase::B, b++, 0});
  return a;
}

// Megatron-LM interleaved 1F1B (Narayanan et al. 2021): virtual micro-batch k maps to
// chunk (k / pp) % vpp and micro-batch (k / (pp*vpp))*pp + k % pp; backward chunks run in reverse.
std::vector<Action> interleaved(int pp, int vpp, int m, int stage) {
  int total = m * vpp;
  auto fwd = [&](int k) {
    int chunk = (k / pp) % vpp;
    int mb = (k / (pp * vpp)) * pp + k % pp;
    return Action{Phase::F, mb, chunk};
  };
  auto bwd = [&](int k) {
    int chunk = vpp - 1 - (k / pp) % vpp;
    int mb = (k / (pp * vpp)) * pp + k % pp;
    return Action{Phase::B, mb, chunk};
  };
  int warmup = (m == pp) ? total : std::min(total, (pp - stage - 1) * 2 + (vpp - 1) * pp);
  std::vector<Action> a;
  int f = 0, b = 0;
  for (; f < warmup; ++f) a.push_back(fwd(f));
  while (f < total) {
    a.push_back(fwd(f++));
    a.push_back(bwd(b++));
  }
  while (b < total) a.push_back(bwd(b++));
  return a;
}

// ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism"): the 1F1B order with each backward split
// into B (input gradient) and W (weight gradient). Stage i defers up to pp-1-i weight-gradient passes
// and runs them where 1F1B would idle in the cool-down, so memory stays at 1F1B's level while the
// bubble shrinks.
std::vector<Action> zero_bubble_h1(int pp, int m, int stage) {
  std::vector<Action> base = one_f_one_b(pp, m, stage);
  int allowed = pp - 1 - stage;
  std::vector<Action> a;
  std::deque<int> pending;
  int forwards_left = m;
  for (const Action& x : base) {
    if (x.phase == Phase::F) {
      a.push_back(x);
      --forwards_left;
      continue;
    }
    a.push_back(x);
    pending.push_back(x.microbatch);
    size_t keep = forwards_left > 0 ? size_t(allowed) : 0;
    // in the cool-down, release one deferred W per backward (they fill the waits between B's)
    if (forwards_left == 0 && pending.size() > 1) keep = pending.size() - 1;
    while (pending.size() > keep) {
      a.push_back({Phase::W, pending.front(), 0});
      pending.pop_front();
    }
  }
  while (!pending.empty()) {
    a.push_back({Phase::W, pending.front(), 0});
    pending.pop_front();
  }
  return a;
}

}  // namespace

std::vector<Action> schedule_actions(Schedule s, int pp, int vpp, int microbatches, int stage) {
  switch (s) {
    case Schedule::gpipe: return gpipe(microbatches);
    case Schedule::one_f_one_b: return one_f_one_b(pp, microbatches, stage);
    case Schedule::interleaved: return interleaved(pp, vpp, microbatches, stage);
    case Schedule::zero_bubble: return zero_bubble_h1(pp, microbatches, stage);
  }
  return {};
}

bool schedule_splits_weight_grad(Schedule s) { return s == Schedule::zero_bubble; }

std::string format_actions(const std::vector<Action>& a) {
  std::string out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (i) out += ' ';
    out += char(a[i].phase);
    out += std::to_string(a[i].microbatch) + "." + std::to_string(a[i].chunk);
  }
  return out;
}

int max_in_flight(const std::vector<Action>& actions) {
  int cur = 0, best = 0;
  for (const Action& x : actions) {
    if (x.phase == Phase::F) best = std::max(best, ++cur);
    if (x.phase == Phase::B) --cur;
  }
  return best;
}

}  // namespace mplan
