// CUPTI activity records -> profile rows (see cupti_records.h).
#include "profiles/cupti_records.h"

#include <algorithm>

#include "core/ops.h"
#include "core/stats.h"
#include "profiles/cost_eval.h"

namespace mplan::profiles {

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
