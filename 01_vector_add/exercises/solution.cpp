// The reference for chapter 01's exercise 4: the body of vector_add.cu's add_float4,
// for one thread. Read it after your own version passes (or fails twice).
#include <cuda_runtime.h>

#include "exercise.h"

namespace solution {

void add_float4_thread(const float* a, const float* b, float* c, std::size_t n, std::size_t first, std::size_t stride) {
  const std::size_t n4 = n / 4;
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  float4* c4 = reinterpret_cast<float4*>(c);
  for (std::size_t i = first; i < n4; i += stride) {
    const float4 x = a4[i], y = b4[i];
    c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  // The tail starts at element 4 n4 and is dealt out like the float4s: thread `first`
  // takes 4 n4 + first, then every stride-th after it. At most 3 elements, so only
  // threads 0, 1, 2 do anything here.
  for (std::size_t i = 4 * n4 + first; i < n; i += stride) c[i] = a[i] + b[i];
}

}  // namespace solution
