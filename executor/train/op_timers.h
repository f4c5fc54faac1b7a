// OpTimers: wall time and call counts per op, keyed by the shared op vocabulary (core/ops.h:
// "qkv_gemm", "attn_core", "tp_allreduce", "adamw" ...), forward and backward together, so measured
// times line up with the simulator's StepReport::ops for `mplan verify`. An optional OpTagger (CUDA
// backend) sees every scope and supplies device times per op.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "executor/train/op_tagger.h"

namespace mplan::exec {

class OpTimers {
 public:
  struct Stat {
    double seconds = 0;
    int64_t calls = 0;
  };
  void add(const char* op, double seconds) {
    Stat& s = step_[op];
    s.seconds += seconds;
    s.calls += 1;
  }
  const std::map<std::string, Stat>& step() const { return step_; }
  void reset_step() { step_.clear(); }
  void set_tagger(OpTagger* t) { tagger_ = t; }
  // Replaces the seconds of the listed ops (device times from the tagger).
  void override_seconds(const std::map<std::string, double>& s) {
    for (const auto& [op, sec] : s) {
      auto it = step_.find(op);
      if (it != step_.end()) it->second.seconds = sec;
    }
  }

  // Times the enclosing scope under `op` (a vocabulary name).
  class Scope {
   public:
    Scope(OpTimers& t, const char* op) : t_(t), op_(op), t0_(std::chrono::steady_clock::now()) {
      if (t_.tagger_) t_.tagger_->begin(op);
    }
    ~Scope() {
      if (t_.tagger_) t_.tagger_->end();
      t_.add(op_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    OpTimers& t_;
    const char* op_;
    std::chrono::steady_clock::time_point t0_;
  };

 private:
  std::map<std::string, Stat> step_;
  OpTagger* tagger_ = nullptr;
};

}  // namespace mplan::exec
