// Chapter 13's kernel exercise (exercises/README.md): the merge of two ring partials, the one
// new formula of the chapter, written by you in mine.cu.
//   build/bin/13_ring_attention_exercise --gtest_filter='Exercise*'   yours (target 13_ring_attention_exercise)
//   build/bin/13_ring_attention_test --gtest_filter='*Exercise*'      the reference, the solution, the wrong answers
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "bf16.h"

// The layout is ring::merge's (ring_kernels.h), the call the ring makes after every tile:
//   (O_a, L_a)  the running partial of `rows` query rows: O_a fp32 [rows, d] row-major, L_a fp32 [rows]
//   (O_b, L_b)  one tile's partial of the same rows: O_b bf16 [rows, d] (chapter 10's output), L_b fp32
// Each O is normalised by its own softmax denominator and L is the natural log-sum-exp of the row's
// scores over the keys that side saw:
//   L_x = log sum_{j in x} e^{s_j},   O_x = sum_{j in x} e^{s_j - L_x} v_j.
// merge overwrites (O_a, L_a) with the same over the union of the two sets of keys (which are
// disjoint):
//   m = max(L_a, L_b),  L = m + log(e^{L_a - m} + e^{L_b - m}),  O = e^{L_a - L} O_a + e^{L_b - L} O_b.
// The contract for rows that saw no key:
//   - a side with L = -inf saw no key: it contributes nothing, and its O is not read (it may hold
//     anything, NaN included: whoever produced it need not have written it);
//   - both sides -inf: the row's output is O = 0 (written, every element) and L = -inf.
// Never NaN, whatever the two L (finite or -inf; +inf and NaN are not valid inputs).
//
// mine.cu, solution.cu and each wrong answer in wrong/ define these two, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   merge         the above, on `stream`. Throws std::invalid_argument, before any launch, for
//                 rows < 0, d < 1, or a pointer that is null or not a device pointer. rows = 0 does
//                 nothing.
#define RING_MERGE_EXERCISE                                                                               \
  extern const bool kImplemented;                                                                         \
  void merge(float* O_a, float* L_a, const ladder::bf16* O_b, const float* L_b, std::int64_t rows, int d, \
             cudaStream_t stream)

namespace mine {
RING_MERGE_EXERCISE;
}
namespace solution {
RING_MERGE_EXERCISE;
}
namespace wrong_unweighted_average {  // wrong/unweighted_average.cu
RING_MERGE_EXERCISE;
}
namespace wrong_no_max_subtraction {  // wrong/no_max_subtraction.cu
RING_MERGE_EXERCISE;
}
namespace wrong_empty_side_read {  // wrong/empty_side_read.cu
RING_MERGE_EXERCISE;
}
namespace wrong_both_empty_nan {  // wrong/both_empty_nan.cu
RING_MERGE_EXERCISE;
}
