// From CUPTI spans to profile rows (CUDA builds only). The CUDA profiler pushes one external
// correlation id around every timed repetition of a kernel or NCCL call; the spans of those ids
// (cupti_activity.h) become median/p10/p90 rows here. No device is needed to test it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiles/cupti_activity.h"
#include "profiles/profile_db.h"

namespace mplan::profiles {

// The collector lives in the one CUPTI part (cupti_activity.h).
using cupti::ActivityCollector;
using cupti::cupti_record_walker;
using cupti::ExternalSpan;
using cupti::RecordWalker;

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
