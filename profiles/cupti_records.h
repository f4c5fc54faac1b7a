// From CUPTI activity buffers to profile rows (CUDA builds only). The CUDA profiler pushes one
// external correlation id (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) around every timed repetition
// of a kernel or NCCL call; CUPTI then emits EXTERNAL_CORRELATION records mapping the CUDA API calls
// made inside (RUNTIME/DRIVER records, by correlation id) to that id, and CONCURRENT_KERNEL records
// with the device timestamps of the kernels those calls launched. The collector joins the three and
// turns the repetitions of each measurement into median/p10/p90 rows. No device is needed to test it:
// synthetic records in a byte buffer go through the same path.
#pragma once
#include <cupti_activity.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiles/profile_db.h"

namespace mplan::profiles {

// Device-side time of everything launched under one external id.
struct ExternalSpan {
  uint64_t start_ns = UINT64_MAX, end_ns = 0;                    // first kernel start .. last kernel end, any device
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> per_device;  // device -> (first start, last end)
  uint64_t busy_ns = 0;                                          // sum of kernel durations
  int kernels = 0;
  std::vector<std::string> names;  // distinct kernel names, launch order
  double span_us() const { return kernels ? double(end_ns - start_ns) * 1e-3 : 0; }
  // Slowest device's own span (a collective on several GPUs: the rank that finished last).
  double max_device_us() const;
};

// Returns the next record after `prev` (nullptr = first) or nullptr at the end; the default walks
// with cuptiActivityGetNextRecord.
using RecordWalker = std::function<CUpti_Activity*(uint8_t* buffer, size_t valid, CUpti_Activity* prev)>;
RecordWalker cupti_record_walker();

class ActivityCollector {
 public:
  void add_record(const CUpti_Activity* r);
  // Every record of one completed CUPTI buffer; returns how many were read.
  size_t add_buffer(uint8_t* buffer, size_t valid, const RecordWalker& walk = cupti_record_walker());
  void add_dropped(size_t n) { dropped_ += n; }

  // Joins kernels to external ids (kernels whose correlation id has no external id are counted in
  // unmatched_kernels()).
  std::map<uint64_t, ExternalSpan> spans() const;
  size_t kernel_records() const { return kernels_.size(); }
  size_t api_records() const { return api_.size(); }
  size_t unmatched_kernels() const;
  size_t dropped() const { return dropped_; }

 private:
  struct KernelRec {
    uint32_t correlation = 0, device = 0, stream = 0;
    uint64_t start = 0, end = 0;
    std::string name;
  };
  std::vector<KernelRec> kernels_;
  std::unordered_map<uint32_t, uint64_t> external_;  // correlation id -> external id
  std::unordered_map<uint32_t, std::string> api_;    // correlation id -> "runtime:cbid" / "driver:cbid"
  size_t dropped_ = 0;
};

// A measurement waiting for its records: the row to fill and the external ids of its repetitions.
struct PendingKernel {
  KernelRow row;
  std::vector<uint64_t> external_ids;
};
struct PendingCollective {
  CollectiveRow row;
  std::vector<uint64_t> external_ids;
};

// Rows for the pending measurements from the collected spans (median/p10/p90 of the repetitions;
// kernels: whole span of the repetition; collectives: the slowest device). Measurements with no
// timed repetition are left out and reported in `missing`.
std::vector<KernelRow> kernel_rows_from(const std::vector<PendingKernel>& pending, const std::map<uint64_t, ExternalSpan>& spans,
                                        std::vector<std::string>& missing);
std::vector<CollectiveRow> collective_rows_from(const std::vector<PendingCollective>& pending,
                                                const std::map<uint64_t, ExternalSpan>& spans, std::vector<std::string>& missing);

}  // namespace mplan::profiles
