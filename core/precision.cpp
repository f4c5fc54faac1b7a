// Names and sizes of the training precisions.
#include "core/precision.h"

namespace mplan {

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::tf32:
      return "tf32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
    case Precision::fp8:
      return "fp8";
    case Precision::mxfp8:
      return "mxfp8";
    case Precision::nvfp4:
      return "nvfp4";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view s) {
  for (Precision p : kAllPrecisions)
    if (to_string(p) == s) return p;
  return std::nullopt;
}

bool is_training_precision(Precision p) { return p != Precision::tf32; }

std::string training_precision_choices() { return "bf16|fp16|fp8|mxfp8|nvfp4|fp32"; }

double gemm_input_bytes(Precision p) {
  switch (p) {
    case Precision::fp32:
    case Precision::tf32:
      return 4;
    case Precision::fp16:
    case Precision::bf16:
      return 2;
    case Precision::fp8:
    case Precision::mxfp8:
      return 1;
    case Precision::nvfp4:
      return 0.5;
  }
  return 2;
}

double activation_bytes(Precision p) { return p == Precision::fp32 || p == Precision::tf32 ? 4 : 2; }

bool is_fp8_family(Precision p) { return p == Precision::fp8 || p == Precision::mxfp8 || p == Precision::nvfp4; }

}  // namespace mplan
