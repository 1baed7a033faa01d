#include <cuda_bf16.h>

#include <string>

#include "cuda_check.h"
#include "launch.h"
#include "ring_kernels.h"

namespace ring {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t threads) {
  const std::int64_t b = (threads + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65536 * 16 ? b : 65536 * 16);  // grid-stride loops cover the rest
}

// One warp per row: every lane reads the two L first, lane 0 writes the new L last.
__global__ void merge_kernel(float* O, float* L, const __nv_bfloat16* O_s, const float* L_s, std::int64_t rows, int d) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = std::int64_t(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t row = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; row < rows; row += warps) {
    const float l_a = L[row], l_b = L_s[row], m = fmaxf(l_a, l_b);
    __syncwarp();
    if (m == -INFINITY) continue;  // neither side saw a key: O stays 0, L stays -inf
    const float w_a = expf(l_a - m), w_b = expf(l_b - m), l = w_a + w_b, inv = 1.0f / l;
    for (int k = lane; k < d; k += 32) {
      const std::int64_t i = row * d + k;
      O[i] = (w_a * O[i] + w_b * __bfloat162float(O_s[i])) * inv;
    }
    if (lane == 0) L[row] = m + logf(l);
  }
}

__global__ void fill_kernel(float* x, std::int64_t n, float v) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    x[i] = v;
}

__global__ void to_bf16_kernel(const float* x, __nv_bfloat16* y, std::int64_t n) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16_rn(x[i]);
}

__global__ void accumulate_kernel(float* acc, const float* x, std::int64_t n) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    acc[i] += x[i];
}

}  // namespace

void merge(float* O_acc, float* L_acc, const bf16* O_s, const float* L_s, std::int64_t rows, int d,
           cudaStream_t stream) {
  ladder::check_pointers("ring::merge", {{"O_acc", O_acc}, {"L_acc", L_acc}, {"O_s", O_s}, {"L_s", L_s}}, 4);
  if (rows <= 0) return;
  merge_kernel<<<blocks_for(rows * 32), kThreads, 0, stream>>>(O_acc, L_acc, O_s, L_s, rows, d);
  CUDA_CHECK_LAUNCH();
}

void fill(float* x, std::int64_t n, float value, cudaStream_t stream) {
  ladder::check_pointers("ring::fill", {{"x", x}}, 4);
  if (n <= 0) return;
  fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, value);
  CUDA_CHECK_LAUNCH();
}

void to_bf16(const float* x, bf16* y, std::int64_t n, cudaStream_t stream) {
  ladder::check_pointers("ring::to_bf16", {{"x", x}, {"y", y}}, 2);
  if (n <= 0) return;
  to_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
  CUDA_CHECK_LAUNCH();
}

void accumulate(float* acc, const float* x, std::int64_t n, cudaStream_t stream) {
  ladder::check_pointers("ring::accumulate", {{"acc", acc}, {"x", x}}, 4);
  if (n <= 0) return;
  accumulate_kernel<<<blocks_for(n), kThreads, 0, stream>>>(acc, x, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ring
