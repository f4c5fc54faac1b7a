// CUPTI external-correlation tagging of op scopes and per-op kernel time (see cupti_op_timer.h).
#include "executor/backend/cuda/cupti_op_timer.h"

#include <cuda_runtime.h>
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "executor/backend/cuda/cuda_check.h"

namespace mplan::exec::gpu {

std::map<std::string, double> op_seconds_from_spans(const std::map<uint64_t, profiles::ExternalSpan>& spans,
                                                    const std::vector<std::string>& names) {
  std::map<std::string, double> out;
  for (const auto& [id, span] : spans) {
    if (id == 0 || id > names.size() || span.kernels == 0) continue;  // not one of our op ids
    out[names[size_t(id - 1)]] += double(span.busy_ns) * 1e-9;
  }
  return out;
}

uint64_t OpIds::id(const char* op) {
  auto it = ids_.find(op);
  if (it != ids_.end()) return it->second;
  names_.emplace_back(op);
  return ids_.emplace(op, uint64_t(names_.size())).first->second;
}

namespace {

// CUPTI hands completed buffers to C callbacks without a user pointer: the collector they fill is
// the one piece of process state (set while a tagger exists).
std::mutex g_mu;
profiles::ActivityCollector* g_collector = nullptr;
constexpr size_t kBufferBytes = size_t(8) << 20;
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_collector) {
    g_collector->add_buffer(buffer, valid);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS) g_collector->add_dropped(dropped);
  }
  std::free(buffer);
}

}  // namespace

CuptiOpTagger::CuptiOpTagger() : collector_(std::make_unique<profiles::ActivityCollector>()) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_collector) return;  // another tagger owns CUPTI: this one stays inactive (wall times)
    g_collector = collector_.get();
  }
  active_ = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS;
  for (CUpti_ActivityKind k : kKinds) active_ = active_ && cuptiActivityEnable(k) == CUPTI_SUCCESS;
  if (!active_) {
    std::fprintf(stderr, "mplan: CUPTI activity tracing unavailable; per-op times are host wall times\n");
    std::lock_guard<std::mutex> lock(g_mu);
    g_collector = nullptr;
  }
}

CuptiOpTagger::~CuptiOpTagger() {
  if (!active_) return;
  (void)cudaDeviceSynchronize();
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  std::lock_guard<std::mutex> lock(g_mu);
  g_collector = nullptr;
}

void CuptiOpTagger::begin(const char* op) {
  if (active_) cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, ids_.id(op));
}

void CuptiOpTagger::end() {
  uint64_t id = 0;
  if (active_) cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
}

std::map<std::string, double> CuptiOpTagger::take_step_seconds() {
  if (!active_) return {};
  // A kernel's record exists only once it has finished: wait for every stream (compute and NCCL)
  // before the forced flush, or the step's last kernels land in the next step's times.
  MPLAN_CUDA_CHECK(cudaDeviceSynchronize());
  if (cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != CUPTI_SUCCESS)
    std::fprintf(stderr, "mplan: cuptiActivityFlushAll failed; per-op GPU times may be incomplete\n");
  std::map<uint64_t, profiles::ExternalSpan> spans;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    spans = collector_->spans();
    if (collector_->dropped())
      std::fprintf(stderr, "mplan: %zu CUPTI records dropped; per-op GPU times are low\n", collector_->dropped());
    collector_ = std::make_unique<profiles::ActivityCollector>();
    g_collector = collector_.get();
  }
  return op_seconds_from_spans(spans, ids_.names());
}

}  // namespace mplan::exec::gpu
