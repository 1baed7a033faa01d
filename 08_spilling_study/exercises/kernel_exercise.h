// Chapter 08's kernel exercise (exercises/README.md): a per-thread accumulator array moved from
// local memory into registers, in the P V product of an attention tile, by you in mine.cu.
//   build/bin/08_spilling_study_exercise --gtest_filter='Exercise*'   yours (target 08_spilling_study_exercise)
//   build/bin/08_spilling_study_test --gtest_filter='*Exercise*'      the solution and the wrong answers
#pragma once

#include <cuda_runtime_api.h>

namespace spill_kernel_exercise {
// The layout of spill.cu's kernel: warp w of a block owns kRows rows of O, and lane x of the warp
// owns the kCols columns x, x + 32, x + 64, x + 96 of each: kRows x kCols accumulators per thread.
inline constexpr int d = 128;  // columns of V and O
inline constexpr int kRows = 4;
inline constexpr int kCols = d / 32;
inline constexpr int kWarps = 4;  // warps per block: a block owns kWarps kRows rows
}  // namespace spill_kernel_exercise

// mine.cu, solution.cu and each wrong answer in wrong/ define these two, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   pv            O = P V for P [M, K], V [K, d], O [M, d], row-major device pointers, M, K >= 1
// The test also reads what ptxas said about each file's kernel (captured at build time, see
// CMakeLists.txt): no stack frame, no spill stores or loads.
#define SPILL_KERNEL_EXERCISE     \
  extern const bool kImplemented; \
  void pv(int M, int K, const float* P, const float* V, float* O, cudaStream_t stream)

namespace mine {
SPILL_KERNEL_EXERCISE;
}
namespace solution {
SPILL_KERNEL_EXERCISE;
}
namespace wrong_unroll_pragma_only {  // wrong/unroll_pragma_only.cu
SPILL_KERNEL_EXERCISE;
}
namespace wrong_columns_mixed_up {  // wrong/columns_mixed_up.cu
SPILL_KERNEL_EXERCISE;
}
