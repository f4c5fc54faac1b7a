// Per-op GPU times from CUPTI: every OpTimers scope pushes the CUPTI external correlation id of its
// op name (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, one id per name), CUPTI reports which kernels
// the CUDA calls inside launched, and the process's one CUPTI part (profiles/cupti_activity.h,
// library mplan_cupti, which the GPU profiler uses too) joins them. Once per step the kernel busy
// time of each op is handed to the trainer, so the per-op table of `mplan train`/`mplan verify`
// holds device time on a GPU. `op_seconds_from_spans` is the pure join (unit-tested with synthetic
// CUPTI buffers). MPLAN_CUPTI_KERNELS=FILE also writes each step's per-kernel split (the last step's
// stays) as JSON: which kernels make up each op, and the kernels outside every op.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "executor/train/op_tagger.h"
#include "profiles/cupti_activity.h"

namespace mplan::exec::gpu {

// Op names by external id (id i names names[i - 1]); kernel busy seconds per op name.
std::map<std::string, double> op_seconds_from_spans(const std::map<uint64_t, cupti::ExternalSpan>& spans,
                                                    const std::vector<std::string>& names);

// One step's kernels per op as JSON: {"ops": {op: {kernel: {"time_s", "launches"}}}, "outside_ops":
// {kernel: ...}} (kernels launched outside every op scope: optimizer steps, gradient norms, copies).
std::string kernel_breakdown_json(const cupti::ActivityCollector& c, const std::vector<std::string>& names);

// External ids for op names: 1, 2, ... in first-use order.
class OpIds {
 public:
  uint64_t id(const char* op);
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::map<std::string, uint64_t> ids_;
  std::vector<std::string> names_;
};

class CuptiOpTagger final : public OpTagger {
 public:
  // Starts the process's CUPTI activity trace (inactive, with wall times, when another trace runs).
  CuptiOpTagger();
  ~CuptiOpTagger() override;
  CuptiOpTagger(const CuptiOpTagger&) = delete;
  CuptiOpTagger& operator=(const CuptiOpTagger&) = delete;

  void begin(const char* op) override;
  void end() override;
  std::map<std::string, double> take_step_seconds() override;
  bool active() const { return active_; }

 private:
  OpIds ids_;
  std::string kernels_file_;  // MPLAN_CUPTI_KERNELS
  std::unique_ptr<cupti::ActivityTrace> trace_;
  bool active_ = false;
};

}  // namespace mplan::exec::gpu
