// DistributedOptimizer: finishes the gradients of one step and applies AdamW, Megatron style.
//   1. all-reduce partial gradients over tp (sequence-parallel params) / etp, and the tied word
//      embedding over the first/last-stage embedding group
//   2. data parallel: zero=0 all-reduces gradients over dp x cp (dense) and edp (experts);
//      zero>=1 (distributed optimizer) reduce-scatters them so each rank owns one shard
//   3. global gradient norm (each element counted once), clipping, AdamW on the owned range
//   4. zero>=1: all-gather the updated parameters
// zero=2 and zero=3 run with the same numerics as zero=1 (gradients and parameters are not
// additionally sharded in memory on the CPU executor).
#pragma once
#include "executor/model/exec.h"
#include "executor/optim/lr_schedule.h"

namespace mplan::exec {

struct OptimConfig {
  LrSchedule schedule;
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
  float weight_decay = 0.1f;
  float clip_grad = 1.0f;  // 0 = no clipping
};

struct OptimStepResult {
  double grad_norm = 0;
  float lr = 0;
  bool finite = true;  // false: the update was skipped
};

class DistributedOptimizer {
 public:
  DistributedOptimizer(Exec& ex, const OptimConfig& cfg);
  // Synchronises gradients, clips, updates parameters for optimizer step `step` (1-based), zeroes grads.
  OptimStepResult step(Exec& ex, int step);

  // Owned range [lo, hi) of the flat buffer of class c, and the AdamW moments over it.
  int64_t lo(ParamClass c) const { return lo_[int(c)]; }
  int64_t hi(ParamClass c) const { return hi_[int(c)]; }
  Tensor& m(ParamClass c) { return m_[int(c)]; }
  Tensor& v(ParamClass c) { return v_[int(c)]; }
  const OptimConfig& config() const { return cfg_; }
  void set_config(const OptimConfig& c) { cfg_ = c; }

 private:
  Comm* group(Exec& ex, ParamClass c) const;
  void sync_partial_grads(Exec& ex);
  void reduce_grads(Exec& ex, ParamClass c);
  double local_norm_sq(Exec& ex, ParamClass c);
  void update(Exec& ex, ParamClass c, const AdamWArgs& a, float clip_coef);
  void gather_params(Exec& ex, ParamClass c);

  OptimConfig cfg_;
  int64_t lo_[2] = {0, 0}, hi_[2] = {0, 0};
  Tensor m_[2], v_[2];
  Tensor shard_grad_[2];  // reduce-scatter output (zero >= 1 over a group of > 1 ranks)
  bool sharded_[2] = {false, false};
};

}  // namespace mplan::exec
