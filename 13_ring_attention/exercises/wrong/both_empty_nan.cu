// A wrong answer to chapter 13's kernel exercise, kept so that the test is known to catch it:
// no special case for a row where neither side saw a key. Then m = max(-inf, -inf) = -inf and
// L_a - m = -inf - (-inf) = NaN, so both weights, O and L are NaN, where the contract asks for
// O = 0 and L = -inf (a causal row whose keys all lie in the future). The test's rows include
// such rows, and the NaN is counted as non-finite (and L != -inf).
#include <stdexcept>
#include <string>

#include "../kernel_exercise.h"
#include "cuda_check.h"
#include "launch.h"

namespace wrong_both_empty_nan {

const bool kImplemented = true;

namespace {

using ladder::bf16;

constexpr int kThreads = 256;  // 8 warps: one query row per warp at a time

// One query row, merged by one warp: lane `lane` owns the row's elements lane, lane + 32, ... < d.
// o_a: the running partial's row (read, then overwritten with the merged row); o_b: the tile's
// row (__bfloat162float(o_b[k])); l_a, l_b: the two L, already read; L_row: where lane 0 writes
// the merged L (the same place l_a came from).
__device__ void merge_row(float* o_a, const bf16* o_b, float l_a, float l_b, float* L_row, int lane, int d) {
  const float m = fmaxf(l_a, l_b);  // -inf when neither side saw a key
  const float w_a = expf(l_a - m), w_b = expf(l_b - m), l = w_a + w_b, inv = 1.0f / l;
  const bool has_a = l_a != -INFINITY, has_b = l_b != -INFINITY;
  for (int k = lane; k < d; k += 32) {
    float o = has_a ? w_a * o_a[k] : 0.0f;
    if (has_b) o = fmaf(w_b, __bfloat162float(o_b[k]), o);
    o_a[k] = o * inv;
  }
  if (lane == 0) *L_row = m + logf(l);
}

// As ring::merge (ring_kernels.cu): one warp per query row; the grid-stride loop keeps the grid
// bounded for any number of rows.
__global__ void __launch_bounds__(kThreads)
    merge_kernel(float* O_a, float* L_a, const bf16* O_b, const float* L_b, std::int64_t rows, int d) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = std::int64_t(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t row = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; row < rows; row += warps) {
    const float l_a = L_a[row], l_b = L_b[row];
    __syncwarp();  // every lane has read L_a[row] before lane 0 overwrites it
    merge_row(O_a + row * d, O_b + row * d, l_a, l_b, L_a + row, lane, d);
  }
}

}  // namespace

void merge(float* O_a, float* L_a, const bf16* O_b, const float* L_b, std::int64_t rows, int d, cudaStream_t stream) {
  if (rows < 0 || d < 1)
    throw std::invalid_argument("ring merge (exercise): rows = " + std::to_string(rows) + ", d = " + std::to_string(d) +
                                ": need rows >= 0 and d >= 1");
  ladder::check_pointers("ring merge (exercise)", {{"O_a", O_a}, {"L_a", L_a}, {"O_b", O_b}, {"L_b", L_b}}, 4);
  if (rows == 0) return;
  const std::int64_t blocks = (rows * 32 + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);  // the loop covers the rest
  merge_kernel<<<grid, kThreads, 0, stream>>>(O_a, L_a, O_b, L_b, rows, d);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wrong_both_empty_nan
