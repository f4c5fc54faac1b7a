// The one CUPTI part: activity records -> spans, and the process's one registration (see
// cupti_activity.h).
#include "profiles/cupti_activity.h"

#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace mplan::cupti {

double ExternalSpan::max_device_us() const {
  uint64_t best = 0;
  for (const auto& [dev, se] : per_device) best = std::max(best, se.second - se.first);
  return double(best) * 1e-3;
}

RecordWalker cupti_record_walker() {
  return [](uint8_t* buffer, size_t valid, CUpti_Activity* prev) -> CUpti_Activity* {
    CUpti_Activity* rec = prev;
    if (cuptiActivityGetNextRecord(buffer, valid, &rec) != CUPTI_SUCCESS) return nullptr;
    return rec;
  };
}

void ActivityCollector::add_record(const CUpti_Activity* r) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      if (k->start == 0 && k->end == 0) break;  // no timestamp (CUPTI ran out of device memory)
      kernels_.push_back({k->correlationId, k->deviceId, k->streamId, k->start, k->end, k->name ? k->name : "?"});
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(r);
      if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) external_[e->correlationId] = e->externalId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(r);
      api_[a->correlationId] =
          std::string(r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? "runtime:" : "driver:") + std::to_string(a->cbid);
      break;
    }
    default:
      break;
  }
}

size_t ActivityCollector::add_buffer(uint8_t* buffer, size_t valid, const RecordWalker& walk) {
  size_t n = 0;
  for (CUpti_Activity* rec = walk(buffer, valid, nullptr); rec; rec = walk(buffer, valid, rec)) {
    add_record(rec);
    ++n;
  }
  return n;
}

std::map<uint64_t, ExternalSpan> ActivityCollector::spans() const {
  std::map<uint64_t, ExternalSpan> out;
  for (const auto& k : kernels_) {
    auto it = external_.find(k.correlation);
    if (it == external_.end()) continue;
    ExternalSpan& s = out[it->second];
    s.start_ns = std::min(s.start_ns, k.start);
    s.end_ns = std::max(s.end_ns, k.end);
    auto dv = s.per_device.find(k.device);
    if (dv == s.per_device.end())
      s.per_device[k.device] = {k.start, k.end};
    else
      dv->second = {std::min(dv->second.first, k.start), std::max(dv->second.second, k.end)};
    s.busy_ns += k.end - k.start;
    s.kernels++;
    if (std::find(s.names.begin(), s.names.end(), k.name) == s.names.end()) s.names.push_back(k.name);
    auto& [ns, launches] = s.by_kernel[k.name];
    ns += k.end - k.start;
    ++launches;
  }
  return out;
}

std::map<std::string, std::pair<uint64_t, int>> ActivityCollector::unmatched_by_kernel() const {
  std::map<std::string, std::pair<uint64_t, int>> out;
  for (const auto& k : kernels_) {
    if (external_.count(k.correlation)) continue;
    auto& [ns, launches] = out[k.name];
    ns += k.end - k.start;
    ++launches;
  }
  return out;
}

size_t ActivityCollector::unmatched_kernels() const {
  size_t n = 0;
  for (const auto& k : kernels_) n += external_.count(k.correlation) == 0;
  return n;
}

namespace {

// CUPTI hands completed buffers to C callbacks without a user pointer: the collector of the active
// trace is the one piece of process state they need (guarded by `mu`; set while a trace exists).
struct Registry {
  std::mutex mu;
  ActivityCollector* collector = nullptr;
  bool registered = false;
};
Registry& registry() {
  static Registry r;
  return r;
}

constexpr size_t kBufferBytes = size_t(8) << 20;
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.collector) {
    r.collector->add_buffer(buffer, valid);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS) r.collector->add_dropped(dropped);
  }
  std::free(buffer);
}

std::string cupti_error(CUptiResult e) {
  const char* s = nullptr;
  cuptiGetResultString(e, &s);
  return s ? s : "CUPTI error " + std::to_string(int(e));
}

}  // namespace

std::unique_ptr<ActivityTrace> ActivityTrace::start(std::string* why) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.collector) {
    if (why) *why = "another CUPTI trace is active in this process";
    return nullptr;
  }
  if (!r.registered) {
    const CUptiResult e = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (e != CUPTI_SUCCESS) {
      if (why) *why = "cuptiActivityRegisterCallbacks: " + cupti_error(e);
      return nullptr;
    }
    r.registered = true;
  }
  for (CUpti_ActivityKind k : kKinds) {
    const CUptiResult e = cuptiActivityEnable(k);
    if (e != CUPTI_SUCCESS) {
      for (CUpti_ActivityKind d : kKinds) cuptiActivityDisable(d);
      if (why) *why = "cuptiActivityEnable(" + std::to_string(int(k)) + "): " + cupti_error(e);
      return nullptr;
    }
  }
  r.collector = new ActivityCollector();
  return std::unique_ptr<ActivityTrace>(new ActivityTrace());
}

ActivityTrace::~ActivityTrace() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  delete r.collector;
  r.collector = nullptr;
}

void ActivityTrace::push(uint64_t id) { cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id); }

void ActivityTrace::pop() {
  uint64_t id = 0;
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
}

void ActivityTrace::flush() { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }

std::map<uint64_t, ExternalSpan> ActivityTrace::spans() const {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.collector->spans();
}

size_t ActivityTrace::dropped() const {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.collector->dropped();
}

ActivityCollector ActivityTrace::take() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  ActivityCollector out = std::move(*r.collector);
  *r.collector = ActivityCollector();
  return out;
}

}  // namespace mplan::cupti
