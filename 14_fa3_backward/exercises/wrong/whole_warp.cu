// A wrong answer to chapter 14's kernel exercise, kept so that the test is known to catch it:
// the lane reduction is the usual warp-wide one (offsets 16, 8, 4, 2, 1), which adds the rows a
// warp holds together.
#include <cuda_bf16.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "../kernel_exercise.h"
#include "cuda_check.h"
#include "launch.h"
#include "numeric.h"

namespace wrong_whole_warp {

const bool kImplemented = true;

namespace {

using fa3_bwd_kernel_exercise::kThreads;
using fa3_bwd_kernel_exercise::kUnit;
using ladder::bf16;

// One thread's part of a row: the 8 products of one 16-byte unit of O and the same unit of dO
// (o and g, both 16-byte aligned), summed in fp32.
__device__ float dot_unit(const bf16* o, const bf16* g) {
  // One 16-byte load each (LDG.E.128): 8 bf16, as 4 words of two.
  const uint4 a = *reinterpret_cast<const uint4*>(o);
  const uint4 b = *reinterpret_cast<const uint4*>(g);
  const std::uint32_t wa[4] = {a.x, a.y, a.z, a.w}, wb[4] = {b.x, b.y, b.z, b.w};
  float dot = 0.0f;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    // A bf16 is the top half of an fp32: each conversion is exact, and so is each product
    // (8 x 8 significant bits fit in fp32's 24). Only the sum rounds, in fp32.
    const float2 x = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&wa[k]));
    const float2 y = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&wb[k]));
    dot = fmaf(x.x, y.x, dot);
    dot = fmaf(x.y, y.y, dot);
  }
  return dot;
}

// Wrong: the textbook warp reduction, over all 32 lanes. A warp holds 4 rows (d = 64) or 2
// (d = 128), so every row's D is the sum of its warp's rows: rel_l2 about 1.7 (d = 64) or 1.
// At rows = 1 the other lanes of the warp are dead and add 0, so that size alone would pass;
// rows = 77 (and 1000) fill warps with several rows, and the test fails there.
template <int kLanes>
__device__ float row_sum(float part) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) part += __shfl_xor_sync(0xffffffffu, part, off);
  return part;
}

// kLanes = d / 8 consecutive threads per row, 8 columns each: a warp holds 2 (d = 128) or 4
// (d = 64) whole rows, and its 16-byte loads cover 512 contiguous bytes of O.
template <int d>
__global__ void __launch_bounds__(kThreads)
    preprocess_D_kernel(const bf16* __restrict__ O, const bf16* __restrict__ dO, float* __restrict__ D, int rows) {
  constexpr int kLanes = d / kUnit;
  const std::int64_t k = std::int64_t(blockIdx.x) * kThreads + threadIdx.x, row = k / kLanes;
  const int col = kUnit * static_cast<int>(k % kLanes);
  const bool live = row < rows;  // the tail: a row's lanes are all live or all not
  const float part = live ? dot_unit(O + row * d + col, dO + row * d + col) : 0.0f;
  const float dot = row_sum<kLanes>(part);  // every lane, live or not: the shuffles name the whole warp
  if (live && col == 0) D[row] = dot;
}

}  // namespace

void preprocess_D(const bf16* O, const bf16* dO, float* D, int rows, int d, cudaStream_t stream) {
  const std::string who = "preprocess_D (exercise)";
  if (d != 64 && d != 128)
    throw std::invalid_argument(who + ": d = " + std::to_string(d) + ", but this kernel handles d = 64 and 128");
  if (rows < 1) throw std::invalid_argument(who + ": rows = " + std::to_string(rows) + ", must be at least 1");
  ladder::check_pointers(who, {{"O", O}, {"dO", dO}, {"D", D, alignof(float)}}, 16);  // O, dO: 16-byte loads
  const std::int64_t blocks = ladder::ceil_div(std::int64_t(rows) * (d / kUnit), std::int64_t(kThreads));
  ladder::check_grid(who, static_cast<unsigned long long>(blocks));
  if (d == 128)
    preprocess_D_kernel<128><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(O, dO, D, rows);
  else
    preprocess_D_kernel<64><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(O, dO, D, rows);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wrong_whole_warp
