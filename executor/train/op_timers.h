// OpTimers: wall time and call counts per op, keyed by the shared op vocabulary (core/ops.h:
// "qkv_gemm", "attn_core", "tp_allreduce", "adamw" ...), forward and backward together, so measured
// times line up with the simulator's StepReport::ops for `mplan verify`.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

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

  // Times the enclosing scope under `op` (a vocabulary name).
  class Scope {
   public:
    Scope(OpTimers& t, const char* op) : t_(t), op_(op), t0_(std::chrono::steady_clock::now()) {}
    ~Scope() { t_.add(op_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count()); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    OpTimers& t_;
    const char* op_;
    std::chrono::steady_clock::time_point t0_;
  };

 private:
  std::map<std::string, Stat> step_;
};

}  // namespace mplan::exec
