// Your code for chapter 01's exercise 4 (see exercise.h and the README). The vector loop
// is written; the elements past the last whole float4 are not. Add the loop that gives
// each of them to exactly one thread, then run
//   cmake --build build --target 01_vector_add_exercise
//   build/bin/01_vector_add_exercise --gtest_filter='Exercise*'
#include <cuda_runtime.h>  // float4, make_float4 (host code may use them too)

#include "exercise.h"

namespace mine {

void add_float4_thread(const float* a, const float* b, float* c, std::size_t n, std::size_t first, std::size_t stride) {
  const std::size_t n4 = n / 4;
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  float4* c4 = reinterpret_cast<float4*>(c);
  for (std::size_t i = first; i < n4; i += stride) {
    const float4 x = a4[i], y = b4[i];
    c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  // TODO: the n % 4 elements after the last whole float4, one per thread.
}

}  // namespace mine
