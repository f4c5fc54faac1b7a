// OpTagger: an observer of the op scopes of OpTimers. A device backend tags the device work each op
// launches (the CUDA backend: a CUPTI external correlation id per op name) and, once per step,
// returns the device time per op, which replaces the host wall time of those ops in the per-op table
// (so `mplan verify` compares the simulator with kernel time on a GPU, as with wall time on a CPU).
#pragma once
#include <map>
#include <string>

namespace mplan::exec {

class OpTagger {
 public:
  virtual ~OpTagger() = default;
  virtual void begin(const char* op) = 0;  // scopes nest; the innermost op owns the work
  virtual void end() = 0;
  // Device seconds per op since the previous call (only ops that ran device work).
  virtual std::map<std::string, double> take_step_seconds() = 0;
};

}  // namespace mplan::exec
