// CUPTI activity buffers -> profile rows, without a GPU: synthetic records (external correlation,
// runtime API, concurrent kernels) are laid out in a byte buffer as CUPTI would hand them over.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "profiles/cupti_records.h"
#include "tests/profiles/cupti_synthetic.h"

using namespace mplan::profiles;
using namespace mplan::test;

TEST(CuptiRecords, KernelsJoinExternalIdsThroughCorrelation) {
  SyntheticBuffer b;
  // repetition 1 (external id 10): a GEMM that launches two kernels (correlation 100, 101)
  b.add(ext(10, 100));
  b.add(api(100));
  b.add(ext(10, 101));
  b.add(api(101));
  b.add(kernel(100, 0, 1000, 1900, "sm90_xmma_gemm_bf16"));
  b.add(kernel(101, 0, 1950, 2000, "splitk_reduce"));
  // repetition 2 (external id 11): one kernel
  b.add(ext(11, 102));
  b.add(api(102));
  b.add(kernel(102, 0, 5000, 6100, "sm90_xmma_gemm_bf16"));
  // a kernel outside any measurement (no external id)
  b.add(kernel(999, 0, 7000, 7100, "other"));
  // a kernel without timestamps (CUPTI ran out of device memory): ignored
  b.add(kernel(102, 0, 0, 0, "untimed"));

  ActivityCollector c;
  EXPECT_EQ(c.add_buffer(b.data(), b.size(), synthetic_walker), 11u);
  EXPECT_EQ(c.kernel_records(), 4u);
  EXPECT_EQ(c.api_records(), 3u);
  EXPECT_EQ(c.unmatched_kernels(), 1u);
  auto spans = c.spans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_DOUBLE_EQ(spans[10].span_us(), 1.0);  // 1000 .. 2000 ns
  EXPECT_EQ(spans[10].kernels, 2);
  EXPECT_EQ(spans[10].busy_ns, 950u);
  EXPECT_EQ(spans[10].names.front(), "sm90_xmma_gemm_bf16");
  EXPECT_DOUBLE_EQ(spans[11].span_us(), 1.1);

  PendingKernel p;
  p.row.op = "fc1_gemm";
  p.row.pass = "fwd";
  p.row.impl = "cuBLASLt";
  p.external_ids = {10, 11, 12};  // 12 never produced a kernel record
  std::vector<std::string> missing;
  auto rows = kernel_rows_from({p}, spans, missing);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(missing.empty());
  EXPECT_EQ(rows[0].reps, 2);
  EXPECT_DOUBLE_EQ(rows[0].median_us, 1.05);
  EXPECT_NEAR(rows[0].p10_us, 1.01, 1e-12);
  EXPECT_NEAR(rows[0].p90_us, 1.09, 1e-12);
  EXPECT_EQ(rows[0].impl, "cuBLASLt: sm90_xmma_gemm_bf16");

  PendingKernel none;
  none.row.op = "attn_core";
  none.external_ids = {42};
  rows = kernel_rows_from({none}, spans, missing);
  EXPECT_TRUE(rows.empty());
  ASSERT_EQ(missing.size(), 1u);
}

TEST(CuptiRecords, CollectiveUsesSlowestDeviceAndBusBandwidth) {
  SyntheticBuffer b;
  // one all-reduce repetition (external id 7) launched on two GPUs from one thread
  b.add(ext(7, 1));
  b.add(ext(7, 2));
  b.add(kernel(1, 0, 10'000, 30'000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  b.add(kernel(2, 1, 12'000, 52'000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  ActivityCollector c;
  c.add_buffer(b.data(), b.size(), synthetic_walker);
  auto spans = c.spans();
  ASSERT_EQ(spans.count(7), 1u);
  EXPECT_DOUBLE_EQ(spans[7].max_device_us(), 40.0);  // device 1: 12 .. 52 us
  EXPECT_DOUBLE_EQ(spans[7].span_us(), 42.0);

  PendingCollective p;
  p.row.op = "all_reduce";
  p.row.group_size = 2;
  p.row.bytes = 1 << 20;
  p.external_ids = {7};
  std::vector<std::string> missing;
  auto rows = collective_rows_from({p}, spans, missing);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].median_us, 40.0);
  EXPECT_NEAR(rows[0].algbw_gbps, double(1 << 20) / 40e-6 / 1e9, 1e-9);
  EXPECT_NEAR(rows[0].busbw_gbps, rows[0].algbw_gbps * 1.0, 1e-9);  // 2(n-1)/n = 1 for n = 2
}

TEST(CuptiRecords, OtherExternalKindsAndRecordKindsAreIgnored) {
  SyntheticBuffer b;
  auto e = ext(5, 1);
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;  // someone else's ids
  b.add(e);
  b.add(kernel(1, 0, 100, 200, "k"));
  ActivityCollector c;
  c.add_buffer(b.data(), b.size(), synthetic_walker);
  EXPECT_TRUE(c.spans().empty());
  EXPECT_EQ(c.unmatched_kernels(), 1u);
}

TEST(CuptiRecords, CuptisOwnWalkerReadsTheSameBuffer) {
  // cuptiActivityGetNextRecord needs no device: the production path walks synthetic buffers too.
  SyntheticBuffer b;
  b.add(ext(10, 100));
  b.add(api(100));
  b.add(kernel(100, 0, 1000, 3000, "gemm"));
  b.add(ext(11, 101));
  b.add(kernel(101, 0, 4000, 5000, "gemm"));
  ActivityCollector c;
  EXPECT_EQ(c.add_buffer(b.data(), b.size()), 5u);
  auto spans = c.spans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_DOUBLE_EQ(spans[10].span_us(), 2.0);
  EXPECT_DOUBLE_EQ(spans[11].span_us(), 1.0);
}

// Issue 29: one CUPTI part per process. The executor's per-op timer and the profiler both trace
// through mplan::cupti::ActivityTrace: a second trace while one is active is refused (with the reason), and
// after the first ends the next one starts. Without a usable CUPTI (no driver) start() says why.
TEST(ActivityTrace, OneTracePerProcessAtATime) {
  std::string why;
  auto first = mplan::cupti::ActivityTrace::start(&why);
  if (!first) GTEST_SKIP() << "CUPTI tracing unavailable here: " << why;
  std::string why2;
  EXPECT_EQ(mplan::cupti::ActivityTrace::start(&why2), nullptr);
  EXPECT_NE(why2.find("another CUPTI trace"), std::string::npos) << why2;
  first.reset();
  auto next = mplan::cupti::ActivityTrace::start(&why);
  EXPECT_NE(next, nullptr) << why;
}
