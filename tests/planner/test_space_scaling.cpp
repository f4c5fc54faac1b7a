// Issue 17, item 6: the search space grows linearly with the layers. Every vpp of 1 .. layers/pp used
// to be a pipeline shape of pp*vpp chunks, so the shapes' total size (and search time and memory) grew
// with the square of num_layers (10,000 layers: 14 s, 3.2 GB). vpp is now searched up to
// kMaxSearchedVpp unless --fix/--max name it.
#include <gtest/gtest.h>

#include "planner/space.h"
#include "planner_test_util.h"

using namespace mplan;
using namespace mplan::planner;

namespace {
// Total chunks over all pipeline shapes of the space: what enumeration builds and the search walks.
int64_t shape_chunks(int layers, const Limits& lim = {}) {
  ModelSpec m = test::tiny_dense();
  m.num_layers = layers;
  Plan p = test::job(m, test::cluster("dgx-h100"), 16, 64, 2048);
  Job job(p);
  Space s = enumerate_structures(job, lim, false);
  int64_t chunks = 0;
  for (const auto& ps : s.pipes) chunks += int64_t(ps.layers.size());
  return chunks;
}
}  // namespace

TEST(SpaceScaling, PipelineShapesGrowLinearlyWithLayers) {
  int64_t small = shape_chunks(1000), big = shape_chunks(4000);
  ASSERT_GT(small, 0);
  // 4x the layers: linear growth gives about 4x; the old quadratic enumeration gave about 16x
  EXPECT_LE(big, 6 * small) << small << " -> " << big;
}

TEST(SpaceScaling, FixedOrBoundedVppIsStillSearched) {
  Limits fix;
  fix.fix["vpp"] = 100;  // beyond the default cap: still reachable when asked for
  fix.fix["pp"] = 4;
  ModelSpec m = test::tiny_dense();
  m.num_layers = 800;
  Plan p = test::job(m, test::cluster("dgx-h100"), 16, 64, 2048);
  Space s = enumerate_structures(Job(p), fix, false);
  bool found = false;
  for (const auto& st : s.structures) found = found || st.base.vpp == 100;
  EXPECT_TRUE(found);
  Limits none;
  Space d = enumerate_structures(Job(p), none, false);
  for (const auto& st : d.structures) EXPECT_LE(st.base.vpp, kMaxSearchedVpp);
}
