// Chapter 14, kernel exercise: the backward's pre-processing, D_i = rowsum(dO_i * O_i), with
// 16-byte loads and a shuffle reduction. Difficulty ★★, about 40 minutes. See exercises/README.md.
//
// Write dot_unit and row_sum (the two TODOs), set kImplemented to true, then run
//   cmake --build build --target 14_fa3_backward_exercise
//   build/bin/14_fa3_backward_exercise --gtest_filter='Exercise*'
// The test checks D against the fp64 reference at d = 64 and 128 and rows = 1, 77, 1000 (whole
// blocks hold 32 or 16 rows: none of these is a multiple), fresh random inputs, D poisoned (NaN)
// before each run. Any sm_80+ GPU runs it. The chapter's version, with more around it, is the
// preprocess kernel of fa3_bwd_prepost.cu.
#include <cuda_bf16.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "kernel_exercise.h"
#include "launch.h"
#include "numeric.h"

namespace mine {

// Until this is true the test stops with "unimplemented: edit 14_fa3_backward/exercises/mine.cu".
const bool kImplemented = false;

namespace {

using fa3_bwd_kernel_exercise::kThreads;
using fa3_bwd_kernel_exercise::kUnit;
using ladder::bf16;

// One thread's part of a row: the 8 products of one 16-byte unit of O and the same unit of dO
// (o and g, both 16-byte aligned), summed in fp32.
__device__ float dot_unit(const bf16* o, const bf16* g) {
  // TODO:
  //   load the unit of O and the unit of dO with one 16-byte load each (a uint4: 4 words of two bf16)
  //   turn each word into two floats (__bfloat1622float2 on the word as a __nv_bfloat162)
  //   return the sum of the 8 products o[e] * g[e], accumulated in fp32 (fmaf)
  return 0.0f;
}

// The sum of `part` over the kLanes neighbouring lanes that hold one row (an aligned group of
// kLanes lanes: kLanes is 8 or 16, a power of two that divides 32), left in every one of them
// (the row's first lane stores it). Every lane of the warp calls it, live or not.
template <int kLanes>
__device__ float row_sum(float part) {
  // TODO: a butterfly of __shfl_xor_sync(0xffffffffu, part, off): which offsets keep every step
  // inside the row's kLanes lanes, and how many steps until each lane holds the whole row's sum?
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

}  // namespace mine
