// CUPTI activity buffers -> profile rows, without a GPU: synthetic records (external correlation,
// runtime API, concurrent kernels) are laid out in a byte buffer as CUPTI would hand them over.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "profiles/cupti_records.h"

using namespace mplan::profiles;

namespace {

// Builds a buffer of records, each 8-byte aligned (ACTIVITY_RECORD_ALIGNMENT).
class SyntheticBuffer {
 public:
  template <class Rec>
  void add(const Rec& r) {
    size_t at = bytes_.size();
    size_t size = (sizeof(Rec) + 7) / 8 * 8;
    bytes_.resize(at + size, 0);
    std::memcpy(bytes_.data() + at, &r, sizeof(Rec));
  }
  uint8_t* data() { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
};

size_t record_size(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    default:
      return 0;
  }
}

// Walks the synthetic layout (what cuptiActivityGetNextRecord does for real buffers).
CUpti_Activity* synthetic_walker(uint8_t* buf, size_t valid, CUpti_Activity* prev) {
  size_t at = 0;
  if (prev) {
    auto* p = reinterpret_cast<uint8_t*>(prev);
    at = size_t(p - buf) + (record_size(prev->kind) + 7) / 8 * 8;
  }
  if (at + sizeof(CUpti_Activity) > valid) return nullptr;
  auto* rec = reinterpret_cast<CUpti_Activity*>(buf + at);
  if (record_size(rec->kind) == 0 || at + record_size(rec->kind) > valid) return nullptr;
  return rec;
}

CUpti_ActivityExternalCorrelation ext(uint64_t external, uint32_t corr) {
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = external;
  e.correlationId = corr;
  return e;
}

CUpti_ActivityAPI api(uint32_t corr) {
  CUpti_ActivityAPI a{};
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = 211;
  a.correlationId = corr;
  return a;
}

CUpti_ActivityKernel10 kernel(uint32_t corr, uint32_t device, uint64_t start, uint64_t end, const char* name) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = corr;
  k.deviceId = device;
  k.start = start;
  k.end = end;
  k.name = name;
  return k;
}

}  // namespace

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
