// libFuzzer driver of one entry point (the build defines MPLAN_FUZZ_ENTRY, e.g. model_json).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return mplan::fuzz::MPLAN_FUZZ_ENTRY(data, size); }
