// Chapter 01's kernel exercise (exercises/README.md): vector_add.cu's float4 grid-stride
// kernel, tail included, written by you in mine.cu.
//   build/bin/01_vector_add_exercise --gtest_filter='Exercise*'   yours (target 01_vector_add_exercise)
//   build/bin/01_vector_add_test --gtest_filter='GpuExercise*'    the solution and the wrong answers
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

// mine.cu, solution.cu and each wrong answer in wrong/ define these two, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   add_float4    c[i] = a[i] + b[i] for i < n on the device, with `blocks` blocks of 256 threads;
//                 a, b, c 16-byte aligned (cudaMalloc's are), n >= 1
#define VADD_KERNEL_EXERCISE      \
  extern const bool kImplemented; \
  void add_float4(const float* a, const float* b, float* c, std::size_t n, unsigned blocks, cudaStream_t stream)

namespace mine {
VADD_KERNEL_EXERCISE;
}
namespace solution {
VADD_KERNEL_EXERCISE;
}
namespace wrong_no_tail {  // wrong/no_tail.cu
VADD_KERNEL_EXERCISE;
}
namespace wrong_off_by_one_tail {  // wrong/off_by_one_tail.cu
VADD_KERNEL_EXERCISE;
}
