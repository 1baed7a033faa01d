// Chapter 04, kernel exercise: one warp per row, the online-softmax (m, l) merge by shuffles.
// Difficulty ★★, about 30 minutes. See exercises/README.md.
//
// Write merge_across_warp (the TODO), set kImplemented to true, then run
//   cmake --build build --target 04_online_softmax_exercise
//   build/bin/04_online_softmax_exercise --gtest_filter='Exercise*'
// The test checks Y against an fp64 softmax on rows shorter than a warp (some lanes have no
// element), of exactly 32, and of lengths that are multiples of nothing, with logits in
// [-20, 20) and -inf (masked) entries, Y poisoned with NaN before each run.
#include <cstddef>

#include "cuda_check.h"
#include "kernel_exercise.h"

namespace mine {

// Until this is true the test stops with "unimplemented: edit 04_online_softmax/exercises/mine.cu".
const bool kImplemented = false;

namespace {

constexpr int kWarpsPerBlock = 8;                             // one row per warp
[[maybe_unused]] constexpr unsigned kFullMask = 0xffffffffu;  // every lane takes part in the shuffles

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

// Every lane holds the pair of its own elements; return the pair of the whole row, in every lane.
__device__ MaxSum merge_across_warp(MaxSum s) {
  // TODO: a butterfly over the 32 lanes: for lane_mask = 16, 8, 4, 2, 1, get the partner lane's
  // pair with __shfl_xor_sync(kFullMask, value, lane_mask) (one call for m, one for l) and merge
  // the two: m = max(m_a, m_b), l = l_a e^(m_a - m) + l_b e^(m_b - m). A lane may have no element
  // (C < 32): two empty pairs must merge into the empty pair, not into NaN.
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

}  // namespace mine
