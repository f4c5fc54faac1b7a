// Synthetic CUPTI activity buffers for tests without a GPU: records (external correlation, runtime
// API, concurrent kernels) laid out in a byte buffer 8-byte aligned as CUPTI hands them over
// (ACTIVITY_RECORD_ALIGNMENT), and a walker that steps through them as cuptiActivityGetNextRecord
// does for real buffers. Used by tests/profiles/test_cupti_records.cpp and the executor's CUPTI op
// timer test (tests/executor/test_cuda_units.cpp).
#pragma once
#include <cupti.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace mplan::test {

class SyntheticBuffer {
 public:
  template <class Rec>
  void add(const Rec& r) {
    const size_t at = bytes_.size(), size = (sizeof(Rec) + 7) / 8 * 8;
    bytes_.resize(at + size, 0);
    std::memcpy(bytes_.data() + at, &r, sizeof(Rec));
  }
  uint8_t* data() { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
};

inline size_t record_size(CUpti_ActivityKind k) {
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

inline CUpti_Activity* synthetic_walker(uint8_t* buf, size_t valid, CUpti_Activity* prev) {
  size_t at = 0;
  if (prev) at = size_t(reinterpret_cast<uint8_t*>(prev) - buf) + (record_size(prev->kind) + 7) / 8 * 8;
  if (at + sizeof(CUpti_Activity) > valid) return nullptr;
  auto* rec = reinterpret_cast<CUpti_Activity*>(buf + at);
  return record_size(rec->kind) == 0 || at + record_size(rec->kind) > valid ? nullptr : rec;
}

// External correlation `external` (an op id) of CUPTI correlation `corr`.
inline CUpti_ActivityExternalCorrelation ext(uint64_t external, uint32_t corr) {
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = external;
  e.correlationId = corr;
  return e;
}

// A runtime API call (cudaLaunchKernel's cbid) of correlation `corr`.
inline CUpti_ActivityAPI api(uint32_t corr) {
  CUpti_ActivityAPI a{};
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = 211;
  a.correlationId = corr;
  return a;
}

// A kernel of correlation `corr` on `device`, from `start` to `end` ns.
inline CUpti_ActivityKernel10 kernel(uint32_t corr, uint32_t device, uint64_t start, uint64_t end, const char* name) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = corr;
  k.deviceId = device;
  k.start = start;
  k.end = end;
  k.name = name;
  return k;
}

}  // namespace mplan::test
