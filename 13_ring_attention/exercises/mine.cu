// Chapter 13, kernel exercise: the merge of two ring partials (O_a, L_a) and (O_b, L_b).
// Difficulty ★★, about 30 minutes. See exercises/README.md.
//
// Write the TODO in merge_row, set kImplemented to true, then run
//   cmake --build build --target 13_ring_attention_exercise
//   build/bin/13_ring_attention_exercise --gtest_filter='Exercise*'
// The test builds rows whose keys are split in two sets, computes each side's partial in fp64,
// stores them as the ring does (O_a fp32, O_b bf16, L fp32) and checks your merge against the
// fp64 merge of exactly those inputs: rows = 1, 37, 77, 333, 1000 (no multiple of the 8 rows of a
// block), d = 1, 33, 64, 100, 128 (no multiple of the warp's 32 lanes), logits at unit scale and
// x100, rows where one side or both saw no key, the O of an empty side filled with NaN.
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "kernel_exercise.h"
#include "launch.h"

namespace mine {

// Until this is true the test stops with "unimplemented: edit 13_ring_attention/exercises/mine.cu".
const bool kImplemented = false;

namespace {

using ladder::bf16;

constexpr int kThreads = 256;  // 8 warps: one query row per warp at a time

// One query row, merged by one warp: lane `lane` owns the row's elements lane, lane + 32, ... < d.
// o_a: the running partial's row (read, then overwritten with the merged row); o_b: the tile's
// row (__bfloat162float(o_b[k])); l_a, l_b: the two L, already read; L_row: where lane 0 writes
// the merged L (the same place l_a came from).
__device__ void merge_row(float* o_a, const bf16* o_b, float l_a, float l_b, float* L_row, int lane, int d) {
  // TODO: overwrite o_a[k] for k = lane, lane + 32, ... < d with the merged row, and (lane 0
  // only) *L_row with the merged L, from l_a, l_b, o_a and o_b:
  //   m = max(l_a, l_b);  w_a = e^(l_a - m), w_b = e^(l_b - m);  l = w_a + w_b
  //   O = (w_a O_a + w_b O_b) / l,   L = m + log(l)
  // and the contract of kernel_exercise.h: a side with L = -inf contributes nothing and its O
  // is not read (it may be NaN); both -inf: write O = 0 and L = -inf. Never NaN.
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

}  // namespace mine
