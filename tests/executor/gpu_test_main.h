// The start of a GPU-only GoogleTest binary: without a visible CUDA device it says so and the binary
// exits 77 (ctest's skip code); otherwise GoogleTest is initialised and the tests run.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>

#include "executor/backend/backend_factory.h"

namespace mplan::test {

// True when the binary `name` has a CUDA device and GoogleTest is initialised; false (printed) when
// it must exit 77.
inline bool start_gpu_tests(const char* name, int& argc, char** argv) {
  if (exec::cuda_device_count() == 0) {
    std::printf("%s: no CUDA device visible: skipped\n", name);
    return false;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return true;
}

}  // namespace mplan::test
