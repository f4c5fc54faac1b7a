// GoogleTest helpers of the core suites: the value an Expected holds (a test failure naming its error,
// and a default value, when it holds none) and a relative comparison that prints both numbers.
#pragma once
#include <gtest/gtest.h>

#include "core/status.h"

namespace mplan::test {

template <class T>
T value_or_fail(const Expected<T>& e) {
  EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message());
  return e.ok() ? e.value() : T{};
}

inline void expect_within(double got, double want, double rel) { EXPECT_NEAR(got / want, 1.0, rel) << got << " vs " << want; }

}  // namespace mplan::test
