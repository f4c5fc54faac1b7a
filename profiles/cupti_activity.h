// The process's one CUPTI part (library mplan_cupti; CUDA builds only): CUPTI activity records ->
// device time per external correlation id, and the one registration of CUPTI's buffer callbacks.
// Code tags what it launches by pushing an external id (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
// CUPTI then emits EXTERNAL_CORRELATION records mapping the CUDA API calls made inside
// (RUNTIME/DRIVER records, by correlation id) to that id, and CONCURRENT_KERNEL records with the
// device timestamps of the kernels those calls launched; ActivityCollector joins the three. Both
// users — the executor's per-op GPU times and `mplan profile --backend cuda` — trace through one
// ActivityTrace, so the callbacks are registered once per process and two tracers never compete.
// Depends on neither the executor nor the profiles; no device is needed to test the collector
// (synthetic records in a byte buffer go through the same path).
#pragma once
#include <cupti_activity.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace mplan::cupti {

// Device-side time of everything launched under one external id.
struct ExternalSpan {
  uint64_t start_ns = UINT64_MAX, end_ns = 0;                    // first kernel start .. last kernel end, any device
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> per_device;  // device -> (first start, last end)
  uint64_t busy_ns = 0;                                          // sum of kernel durations
  int kernels = 0;
  std::vector<std::string> names;                             // distinct kernel names, launch order
  std::map<std::string, std::pair<uint64_t, int>> by_kernel;  // kernel name -> (busy ns, launches)
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
  // The kernels launched outside every external id, by name: (busy ns, launches).
  std::map<std::string, std::pair<uint64_t, int>> unmatched_by_kernel() const;
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

// The process's CUPTI activity tracing (kernels, runtime and driver API calls, external
// correlation). At most one trace is active at a time; CUPTI's buffer callbacks are registered on
// the first start() of the process and hand every completed buffer to the active trace.
class ActivityTrace {
 public:
  // nullptr, with the reason in *why, when another trace is active or CUPTI refuses.
  static std::unique_ptr<ActivityTrace> start(std::string* why);
  ~ActivityTrace();  // flushes what is buffered and disables the activity kinds
  ActivityTrace(const ActivityTrace&) = delete;
  ActivityTrace& operator=(const ActivityTrace&) = delete;

  // Tags the CUDA calls made until the matching pop with `id` (> 0).
  static void push(uint64_t id);
  static void pop();
  // Hands CUPTI's buffered records to the collector. A kernel's record exists only once it has
  // finished: synchronise the device (or the streams of interest) first.
  void flush();
  std::map<uint64_t, ExternalSpan> spans() const;  // of everything collected so far
  size_t dropped() const;
  // What was collected since the last take(); the trace goes on with an empty collector.
  ActivityCollector take();

 private:
  ActivityTrace() = default;
};

}  // namespace mplan::cupti
