// Each framework release's documented per-step defaults load from the embedded data/frameworks/*.json
// (simulator/framework_data.h): every framework has a file, and the values are the cited ones.
#include <gtest/gtest.h>

#include "simulator/framework_data.h"

namespace mplan {
namespace {

TEST(FrameworkData, EveryFrameworkHasItsDocumentedPerStepDefaults) {
  for (Framework f : {Framework::megatron, Framework::torchtitan, Framework::llm_foundry, Framework::maxtext}) {
    const FrameworkStep& s = framework_step(f);
    EXPECT_TRUE(s.grad_clip) << to_string(f);  // all four clip by the global norm (1.0) by default
    EXPECT_GE(s.data_loading_s, 0.0) << to_string(f);
    // Megatron's distributed optimizer also writes the bf16 parameter copy and zeroes the main-grad buffer
    EXPECT_EQ(s.optimizer_bytes_per_param, f == Framework::megatron ? 34.0 : 28.0) << to_string(f);
    EXPECT_GE(s.logging_s, 0.0) << to_string(f);
  }
  // MaxText's one measured per-step gap (maxtext pull request #324: 3.8 ms between steps)
  EXPECT_DOUBLE_EQ(framework_step(Framework::maxtext).data_loading_s, 0.0038);
}

}  // namespace
}  // namespace mplan
