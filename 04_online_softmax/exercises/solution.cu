// The solution of chapter 04's kernel exercise (mine.cu): softmax.cu's warp_reduce(s, Merge{}).
// Read it after your own version passes (or fails twice).
#include <cstddef>

#include "cuda_check.h"
#include "kernel_exercise.h"

namespace solution {

const bool kImplemented = true;

namespace {

constexpr int kWarpsPerBlock = 8;  // one row per warp
constexpr unsigned kFullMask = 0xffffffffu;

// The running pair of a row, or of the part of it one lane has seen: m the max, l the sum of
// e^(x - m). The empty pair is (-inf, 0).
struct MaxSum {
  float m, l;
};

// x joins (m, l): m' = max(m, x), l' = l e^(m - m') + e^(x - m'). A -inf (masked) element
// adds nothing, and skipping it keeps -inf - -inf (NaN) out of an empty pair.
__device__ void update(MaxSum& s, float x) {
  if (x == -INFINITY) return;
  const float m = fmaxf(s.m, x);
  s.l = s.l * expf(s.m - m) + expf(x - m);
  s.m = m;
}

// A butterfly: after the exchange with lane ^ 16, ^ 8, ^ 4, ^ 2, ^ 1 every lane has merged all 32
// pairs (in a different order per lane, the same result up to rounding).
__device__ MaxSum merge_across_warp(MaxSum s) {
#pragma unroll
  for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2) {
    const MaxSum o{__shfl_xor_sync(kFullMask, s.m, lane_mask), __shfl_xor_sync(kFullMask, s.l, lane_mask)};
    const float m = fmaxf(s.m, o.m);
    if (m == -INFINITY) continue;  // both empty: keep (-inf, 0) rather than 0 * e^(-inf - -inf) = NaN
    s = {m, s.l * expf(s.m - m) + o.l * expf(o.m - m)};
  }
  return s;
}

// Row `row` belongs to one warp. Lane `lane` reads elements lane, lane + 32, ... (each warp-wide
// load one contiguous piece of the row) and folds them into its own pair; the pairs are merged
// across the warp; then every lane writes its elements normalised with the row's (m, l).
__global__ void softmax_kernel(const float* X, float* Y, int R, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + static_cast<int>(threadIdx.x / 32);
  if (row >= R) return;  // the whole warp leaves together: the shuffles see all 32 lanes
  const int lane = threadIdx.x % 32;
  const float* x = X + std::size_t(row) * C;
  float* y = Y + std::size_t(row) * C;

  MaxSum s{-INFINITY, 0.0f};
  for (int c = lane; c < C; c += 32) update(s, x[c]);
  s = merge_across_warp(s);
  for (int c = lane; c < C; c += 32) y[c] = expf(x[c] - s.m) / s.l;
}

}  // namespace

void softmax_rows(const float* X, float* Y, int R, int C, cudaStream_t stream) {
  const unsigned blocks = (unsigned(R) + kWarpsPerBlock - 1) / kWarpsPerBlock;
  softmax_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream>>>(X, Y, R, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace solution
