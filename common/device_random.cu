#include "device_random.h"

#include <cuda_bf16.h>

#include "cuda_check.h"
#include "launch.h"

namespace ladder {

namespace {

__device__ std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <class T>
__global__ void fill_uniform_kernel(T* x, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint64_t h = splitmix64(seed * 0x2545f4914f6cdd1dull + i);
    x[i] = from_float<T>(float(h >> 40) * (2.0f / 16777216.0f) - 1.0f);  // 24 bits -> [-1, 1)
  }
}

template <class T, class DeviceT>
void fill(T* x, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  check_pointers("ladder::fill_uniform_device", {{"x", x}}, alignof(T));
  // A grid-stride loop over a fixed grid: every SM busy, no grid-size limit on n.
  fill_uniform_kernel<DeviceT><<<4096, 256, 0, stream>>>(reinterpret_cast<DeviceT*>(x), n, seed);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void fill_uniform_device(bf16* x, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  fill<bf16, __nv_bfloat16>(x, n, seed, stream);
}
void fill_uniform_device(float* x, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  fill<float, float>(x, n, seed, stream);
}

}  // namespace ladder
