// GoogleTest glue shared by every chapter's tests.
//   Suites named Cpu* always run (CTest label cpu); suites named Gpu* start with
//   LADDER_REQUIRE_GPU(), which skips them, with the reason, on a machine without
//   a CUDA device (label gpu).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "compare.h"
#include "device.h"
#include "random.h"

// No GPU here: the test says so and skips. What does run without one is in each chapter
// README's "Runs on" (the CPU models, the Cpu* tests, the tools).
#define LADDER_REQUIRE_GPU()                                                               \
  do {                                                                                     \
    if (!::ladder::device().available)                                                     \
      GTEST_SKIP() << "GPU test skipped: no CUDA device (" << ::ladder::device().reason    \
                   << "); what runs without a GPU is in the chapter README's \"Runs on\""; \
  } while (0)

// A fresh seed for this test, shown with any failure (replay: LADDER_SEED=<seed>).
#define LADDER_TEST_SEED(var)                       \
  const std::uint64_t var = ::ladder::fresh_seed(); \
  SCOPED_TRACE("seed " + std::to_string(var) + " (replay with LADDER_SEED=" + std::to_string(var) + ")")

namespace ladder {

// LADDER_SMALL=1 (set for the compute-sanitizer runs): tests use only their small sizes.
bool small_mode();

// EXPECT_TRUE(ladder::matches(out, ref, kFp32)) << "what";
::testing::AssertionResult matches(const std::vector<float>& out, const std::vector<double>& ref, const Bound& bound);

}  // namespace ladder
