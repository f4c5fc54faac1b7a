// CUPTI external-correlation tagging of op scopes and per-op kernel time (see cupti_op_timer.h).
#include "executor/backend/cuda/cupti_op_timer.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

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

namespace {
nlohmann::json kernels_json(const std::map<std::string, std::pair<uint64_t, int>>& by_kernel) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, t] : by_kernel) j[name] = {{"time_s", double(t.first) * 1e-9}, {"launches", t.second}};
  return j;
}
}  // namespace

std::string kernel_breakdown_json(const cupti::ActivityCollector& c, const std::vector<std::string>& names) {
  std::map<std::string, std::map<std::string, std::pair<uint64_t, int>>> per_op;  // several ids may share a name
  for (const auto& [id, span] : c.spans()) {
    if (id == 0 || id > names.size() || span.kernels == 0) continue;
    auto& op = per_op[names[size_t(id - 1)]];
    for (const auto& [k, t] : span.by_kernel) {
      op[k].first += t.first;
      op[k].second += t.second;
    }
  }
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [op, kernels] : per_op) ops[op] = kernels_json(kernels);
  return nlohmann::json{{"ops", ops}, {"outside_ops", kernels_json(c.unmatched_by_kernel())}}.dump(1);
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
  if (const char* f = std::getenv("MPLAN_CUPTI_KERNELS")) kernels_file_ = f;
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
  if (!kernels_file_.empty()) {  // written whole, then renamed over the previous step's
    const std::string tmp = kernels_file_ + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      const std::string j = kernel_breakdown_json(c, ids_.names());
      const bool ok = std::fwrite(j.data(), 1, j.size(), f) == j.size();
      if (std::fclose(f) == 0 && ok) std::rename(tmp.c_str(), kernels_file_.c_str());
    }
  }
  return op_seconds_from_spans(c.spans(), ids_.names());
}

}  // namespace mplan::exec::gpu
