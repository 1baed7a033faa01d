#include "gtest_helpers.h"

#include <cstdlib>
#include <cstring>

namespace ladder {

bool small_mode() {
  const char* v = std::getenv("LADDER_SMALL");
  return v && std::strcmp(v, "0") != 0;
}

::testing::AssertionResult matches(const std::vector<float>& out, const std::vector<double>& ref, const Bound& bound) {
  const Comparison c = compare(out, ref);
  if (c.within(bound)) return ::testing::AssertionSuccess() << c.str();
  return ::testing::AssertionFailure() << c.str() << " exceeds the bound " << bound.rel_l2 << " (" << bound.why << ")";
}

}  // namespace ladder
