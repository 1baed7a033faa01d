// Chapter 04's kernel exercise (exercises/README.md): softmax with one warp per row, the
// lanes' (m, l) pairs merged by warp shuffles, written by you in mine.cu.
//   build/bin/04_online_softmax_exercise --gtest_filter='Exercise*'   yours (target 04_online_softmax_exercise)
//   build/bin/04_online_softmax_test --gtest_filter='GpuExercise*'    the solution and the wrong answers
#pragma once

#include <cuda_runtime_api.h>

// mine.cu, solution.cu and each wrong answer in wrong/ define these two, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   softmax_rows  Y_i = softmax(X_i) for the R rows of C floats each (row-major device pointers,
//                 R, C >= 1; -inf entries allowed, but no row of only -inf)
#define OSM_KERNEL_EXERCISE       \
  extern const bool kImplemented; \
  void softmax_rows(const float* X, float* Y, int R, int C, cudaStream_t stream)

namespace mine {
OSM_KERNEL_EXERCISE;
}
namespace solution {
OSM_KERNEL_EXERCISE;
}
namespace wrong_merge_without_rescale {  // wrong/merge_without_rescale.cu
OSM_KERNEL_EXERCISE;
}
namespace wrong_empty_lanes_nan {  // wrong/empty_lanes_nan.cu
OSM_KERNEL_EXERCISE;
}
namespace wrong_shfl_down_lane0_only {  // wrong/shfl_down_lane0_only.cu
OSM_KERNEL_EXERCISE;
}
