// A framework release's documented per-step defaults (data/frameworks/<framework>.json, embedded, each
// with its citation): whether every step clips the gradients by their global norm, and the per-step
// HBM traffic of its optimizer step per parameter, and the host costs the framework's training loop adds (data loading, logging)
// where they are not hidden.
#pragma once
#include "core/framework.h"

namespace mplan {

struct FrameworkStep {
  bool grad_clip = true;                  // global-norm clipping every step (a norm reduction and a scale of the gradients)
  double optimizer_bytes_per_param = 34;  // HBM traffic of the optimizer step per local parameter
  double data_loading_s = 0;              // exposed data-loading time per step
  double logging_s = 0;                   // exposed logging / metric-reduction time per step
};

// The committed defaults of framework f; throws std::logic_error when the embedded file is missing or
// malformed (a build defect, caught by tests/simulator/test_framework_data.cpp).
const FrameworkStep& framework_step(Framework f);

}  // namespace mplan
