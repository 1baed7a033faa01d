// The solution of chapter 01's kernel exercise (mine.cu): vector_add.cu's add_float4.
// Read it after your own version passes (or fails twice).
#include "cuda_check.h"
#include "kernel_exercise.h"

namespace solution {

const bool kImplemented = true;

namespace {

constexpr unsigned kThreads = 256;

__global__ void add_float4_kernel(const float* a, const float* b, float* c, std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t first = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  const std::size_t n4 = n / 4;
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  float4* c4 = reinterpret_cast<float4*>(c);
  for (std::size_t i = first; i < n4; i += stride) {
    const float4 x = a4[i], y = b4[i];
    c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  // The tail starts at element 4 n4 and is dealt out like the float4s: thread `first` takes
  // 4 n4 + first, and would take every stride-th after it (there are at most 3).
  for (std::size_t i = 4 * n4 + first; i < n; i += stride) c[i] = a[i] + b[i];
}

}  // namespace

void add_float4(const float* a, const float* b, float* c, std::size_t n, unsigned blocks, cudaStream_t stream) {
  add_float4_kernel<<<blocks, kThreads, 0, stream>>>(a, b, c, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace solution
