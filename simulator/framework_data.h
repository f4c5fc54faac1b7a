// A framework release's documented per-step defaults (data/frameworks/<framework>.json "step" and
// "kernels", embedded, each with its citation): whether every step clips the gradients by their
// global norm, the per-step HBM traffic of its optimizer step per parameter, the host time its training
// loop adds per step (data loading, logging, the loop's own synchronisation: a cited number, or
// "fitted" where no measurement exists), the HBM traffic of its FP8 scaling kernels and the rate of
// the FlashAttention-2 build it calls.
#pragma once
#include "core/framework.h"

namespace mplan {

struct FrameworkStep {
  bool grad_clip = true;                  // global-norm clipping every step (a norm reduction and a scale of the gradients)
  double optimizer_bytes_per_param = 34;  // HBM traffic of the optimizer step per local parameter
  double data_loading_s = 0;              // exposed data-loading time per step
  double logging_s = 0;                   // exposed logging / metric-reduction time per step
  double host_sync_s = 0;                 // the loop's per-step host time (when not fitted)
  bool host_sync_fitted = false;          // no published measurement: CostParams::step_host_sync_s
  // The FP8 scaling kernels of one GEMM, HBM bytes: per element of the activation input (forward)
  // and of the output gradient (backward), per weight element in the forward and in the backward.
  double fp8_act_bytes = 3, fp8_weight_fwd_bytes = 0, fp8_weight_bwd_bytes = 0;
  // The rate of the FlashAttention-2 kernel the framework calls, relative to the flash-attn 2
  // package's measured rate (the calibration's attn_fa2_*_eff): PyTorch SDPA's bundled build is slower.
  double flash_attention_2_rate = 1;
  // The per-step host time the data states (data loading, logging, the loop's own when measured).
  double stated_host_s() const { return data_loading_s + logging_s + host_sync_s; }
};

// The committed defaults of framework f; throws std::logic_error when the embedded file is missing or
// malformed (a build defect, caught by tests/simulator/test_framework_data.cpp).
const FrameworkStep& framework_step(Framework f);

}  // namespace mplan
