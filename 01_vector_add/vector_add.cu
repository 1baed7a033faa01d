#include <cstdint>
#include <stdexcept>

#include "cuda_check.h"
#include "device.h"
#include "vector_add.h"

namespace vadd {

namespace {

constexpr unsigned kThreads = 256;

// 1. The first-person view: "I am thread i; I add element i."
//    The grid is rounded up to whole blocks, so the last block's threads past n
//    must do nothing: the `if` is the bounds check every kernel needs.
__global__ void add_one_per_element(const float* a, const float* b, float* c, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// 2. Grid-stride loop: the grid no longer depends on n. Each thread starts at
//    its global index and jumps by the number of threads in the grid, so any n
//    works with a grid that just fills the GPU.
__global__ void add_grid_stride(const float* a, const float* b, float* c, std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride) c[i] = a[i] + b[i];
}

// 3. Vectorised: one 16-byte load (LDG.128) moves four floats, so a warp moves
//    512 bytes per instruction instead of 128 and fewer instructions keep the
//    same bytes in flight. The n % 4 leftover elements go one per thread.
__global__ void add_float4(const float* a, const float* b, float* c, std::size_t n) {
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
  for (std::size_t i = 4 * n4 + first; i < n; i += stride) c[i] = a[i] + b[i];
}

// A grid that fills the GPU: as many resident blocks as the occupancy calculator
// allows, asked once per kernel (not inside the timed launches).
template <auto kernel>
unsigned full_grid() {
  static const unsigned blocks = [] {
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
    return static_cast<unsigned>(per_sm * ladder::device().sm_count);
  }();
  return blocks;
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

const char* name(Kernel k) {
  switch (k) {
    case Kernel::OnePerElement: return "one_per_element";
    case Kernel::GridStride: return "grid_stride";
    case Kernel::Float4: return "float4";
  }
  return "?";
}

void vector_add(Kernel k, const float* a, const float* b, float* c, std::size_t n, cudaStream_t stream) {
  if (n == 0) throw std::invalid_argument("vector_add: n must be >= 1");
  switch (k) {
    case Kernel::OnePerElement: {
      const std::size_t blocks = blocks_for(n, kThreads);
      if (blocks > 0x7FFFFFFFu) throw std::invalid_argument("vector_add: n too large for one thread per element");
      add_one_per_element<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a, b, c, n);
      break;
    }
    case Kernel::GridStride: add_grid_stride<<<full_grid<add_grid_stride>(), kThreads, 0, stream>>>(a, b, c, n); break;
    case Kernel::Float4:
      if (!aligned16(a) || !aligned16(b) || !aligned16(c))
        throw std::invalid_argument("vector_add float4: a, b and c must be 16-byte aligned");
      add_float4<<<full_grid<add_float4>(), kThreads, 0, stream>>>(a, b, c, n);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace vadd
