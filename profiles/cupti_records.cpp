// CUPTI activity records -> profile rows (see cupti_records.h).
#include "profiles/cupti_records.h"

#include <algorithm>

#include "core/ops.h"
#include "core/stats.h"
#include "profiles/cost_eval.h"

namespace mplan::profiles {

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
  }
  return out;
}

size_t ActivityCollector::unmatched_kernels() const {
  size_t n = 0;
  for (const auto& k : kernels_) n += external_.count(k.correlation) == 0;
  return n;
}

namespace {

template <class Pending>
std::vector<double> rep_times_us(const Pending& p, const std::map<uint64_t, ExternalSpan>& spans, bool slowest_device,
                                 std::string* kernel_name) {
  std::vector<double> t;
  for (uint64_t id : p.external_ids) {
    auto it = spans.find(id);
    if (it == spans.end() || it->second.kernels == 0) continue;
    double us = slowest_device ? it->second.max_device_us() : it->second.span_us();
    if (us > 0) t.push_back(us);
    if (kernel_name && kernel_name->empty() && !it->second.names.empty()) *kernel_name = it->second.names.front();
  }
  return t;
}

}  // namespace

std::vector<KernelRow> kernel_rows_from(const std::vector<PendingKernel>& pending, const std::map<uint64_t, ExternalSpan>& spans,
                                        std::vector<std::string>& missing) {
  std::vector<KernelRow> rows;
  for (const auto& p : pending) {
    std::string name;
    auto t = rep_times_us(p, spans, false, &name);
    if (t.empty()) {
      missing.push_back(p.row.op + " " + p.row.pass);
      continue;
    }
    stats::Summary s = stats::summarize(t);
    KernelRow r = p.row;
    r.reps = s.n;
    r.median_us = s.median, r.p10_us = s.p10, r.p90_us = s.p90;
    if (!name.empty()) r.impl = r.impl.empty() ? name : r.impl + ": " + name;
    rows.push_back(r);
  }
  return rows;
}

std::vector<CollectiveRow> collective_rows_from(const std::vector<PendingCollective>& pending,
                                                const std::map<uint64_t, ExternalSpan>& spans,
                                                std::vector<std::string>& missing) {
  std::vector<CollectiveRow> rows;
  for (const auto& p : pending) {
    auto t = rep_times_us(p, spans, true, nullptr);
    if (t.empty()) {
      missing.push_back(p.row.op + " " + std::to_string(p.row.bytes) + " B");
      continue;
    }
    stats::Summary s = stats::summarize(t);
    CollectiveRow r = p.row;
    r.reps = s.n;
    r.median_us = s.median, r.p10_us = s.p10, r.p90_us = s.p90;
    r.algbw_gbps = double(r.bytes) / (s.median * 1e-6) / 1e9;
    auto c = parse_collective(r.op);
    r.busbw_gbps = r.algbw_gbps * (c ? collective_busbw_factor(*c, r.group_size) : 1.0);
    rows.push_back(r);
  }
  return rows;
}

}  // namespace mplan::profiles
