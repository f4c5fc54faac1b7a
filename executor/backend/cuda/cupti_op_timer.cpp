// CUPTI external-correlation tagging of op scopes and per-op kernel time (see cupti_op_timer.h).
#include "executor/backend/cuda/cupti_op_timer.h"

#include <cuda_runtime.h>

#include <cstdio>

#include "executor/backend/cuda/cuda_check.h"

namespace mplan::exec::gpu {

std::map<std::string, double> op_seconds_from_spans(const std::map<uint64_t, cupti::ExternalSpan>& spans,
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

CuptiOpTagger::CuptiOpTagger() {
  std::string why;
  trace_ = cupti::ActivityTrace::start(&why);
  active_ = trace_ != nullptr;
  if (!active_)
    std::fprintf(stderr, "mplan: CUPTI activity tracing unavailable (%s); per-op times are host wall times\n", why.c_str());
}

CuptiOpTagger::~CuptiOpTagger() {
  if (!active_) return;
  (void)cudaDeviceSynchronize();
  trace_.reset();
}

void CuptiOpTagger::begin(const char* op) {
  if (active_) cupti::ActivityTrace::push(ids_.id(op));
}

void CuptiOpTagger::end() {
  if (active_) cupti::ActivityTrace::pop();
}

std::map<std::string, double> CuptiOpTagger::take_step_seconds() {
  if (!active_) return {};
  // A kernel's record exists only once it has finished: wait for every stream (compute and NCCL)
  // before the forced flush, or the step's last kernels land in the next step's times.
  MPLAN_CUDA_CHECK(cudaDeviceSynchronize());
  trace_->flush();
  cupti::ActivityCollector c = trace_->take();
  if (c.dropped()) std::fprintf(stderr, "mplan: %zu CUPTI records dropped; per-op GPU times are low\n", c.dropped());
  return op_seconds_from_spans(c.spans(), ids_.names());
}

}  // namespace mplan::exec::gpu
