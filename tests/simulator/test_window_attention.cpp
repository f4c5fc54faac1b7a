// Sliding-window attention in the simulator (issue 16): a windowed layer's fused attention computes only
// the blocks inside the window, each layer is costed by its own kind (window or full, dense or MoE), and
// Megatron's unfused path, which masks but does not skip, costs the same with or without a window.
#include <gtest/gtest.h>

#include "core/presets.h"
#include "sim_fixtures.h"
#include "simulator/cost_params.h"
#include "simulator/simulator.h"

namespace mplan {
namespace {

// gpt-oss-120b on 8 H100s, ep 8, 8k tokens (a 128-token window skips most of the score matrix)
Plan oss_plan(int64_t window, int skip_freq) {
  Plan p = preset_plan("gpt-oss-120b", 8, 16, 8192, 1, 1, 1, 8);
  p.model.window_size = window;
  p.model.window_attn_skip_freq = skip_freq;
  return p;
}

double step_s(const Plan& p, const CostParams& c) { return simulate_ok(p, c).step_time_s; }

TEST(WindowAttention, EachLayerIsCostedByItsOwnAttention) {
  ClusterSpec cl = *cluster_preset("dgx-h100");
  CostParams c = no_comm_params(cl);
  double full = step_s(oss_plan(0, 0), c);
  double half = step_s(oss_plan(128, 2), c);  // the preset: every 2nd layer full attention
  double all = step_s(oss_plan(128, 0), c);   // every layer windowed
  EXPECT_LT(all, half);
  EXPECT_LT(half, full);
  // 18 of 36 layers windowed: the saving is half of windowing every layer (no communication, pp = 1,
  // so the step is the sum of the layers' work)
  EXPECT_NEAR(full - half, 0.5 * (full - all), 1e-6 * full);
  // a window as long as the sequence is full attention
  EXPECT_NEAR(step_s(oss_plan(8192, 2), c), full, 1e-9 * full);
}

TEST(WindowAttention, UnfusedAttentionMasksWithoutSkipping) {
  ClusterSpec cl = *cluster_preset("dgx-h100");
  CostParams c = no_comm_params(cl);
  Plan full = oss_plan(0, 0), win = oss_plan(128, 2);
  full.parallel.attention_backend = win.parallel.attention_backend = AttentionBackend::unfused;
  EXPECT_NEAR(step_s(win, c), step_s(full, c), 1e-9 * step_s(full, c));
}

}  // namespace
}  // namespace mplan
