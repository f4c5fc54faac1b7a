// Numeric precisions of training (bf16, fp8 ...) with their names and element sizes.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace mplan {

enum class Precision { fp32, tf32, fp16, bf16, fp8, mxfp8, nvfp4 };

constexpr std::array<Precision, 7> kAllPrecisions = {Precision::fp32, Precision::tf32,  Precision::fp16, Precision::bf16,
                                                     Precision::fp8,  Precision::mxfp8, Precision::nvfp4};

std::string_view to_string(Precision p);
std::optional<Precision> parse_precision(std::string_view s);
// Precisions a user may train in (tf32 is a GEMM mode, not a training precision).
bool is_training_precision(Precision p);
// "bf16|fp16|fp8|mxfp8|nvfp4|fp32", for messages.
std::string training_precision_choices();
// Bytes of a GEMM input element in this precision (fp8 = 1, nvfp4 = 0.5 plus scales ignored).
double gemm_input_bytes(Precision p);
// Bytes of an activation element stored between ops (bf16 for every low-precision mode, 4 for fp32).
double activation_bytes(Precision p);
bool is_fp8_family(Precision p);

}  // namespace mplan
