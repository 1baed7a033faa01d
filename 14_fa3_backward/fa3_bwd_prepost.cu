// The two small kernels around chapter 14's main loop (any sm_80+ GPU compiles them; they
// run before and after it in the same stream). Both only move memory, so both are written for
// the bandwidth: every thread moves 16-byte units, and the lanes of a row are neighbours.
//   preprocess   d / 8 lanes per query row, 8 columns each: D_i = rowsum(dO_i * O_i) in fp32,
//                and L in log2 units, so the main loop's P = exp2(S scale log2(e) - L2) is one
//                FMA and one exp2. A row that saw no key (L = -inf: causal with N > N_kv) and the
//                padding rows up to N_pad get L2 = +inf: their P is exactly 0. D of the padding
//                rows is 0. The main kernel reads a query tile's rows of each at once (one bulk
//                copy), so both are padded to N_pad rows per head (128 rows: the largest query
//                tile). The same pass zeroes the row's d floats of the dQ accumulator (and, in
//                the first row of each 64-row block, that block's flags): the zeros are written
//                by the pass that visits every row anyway, not by a memset's second pass over
//                the accumulator (FA3's preprocessing does the same).
//   postprocess  dQ = scale * dQ_acc, read from the accumulator's 64 x 64 blocks
//                (fa3_bwd_layout.h), written as bf16 rows: 8 columns per thread, two 16-byte
//                units of the block in, one 16-byte unit of dQ out.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "09_tensor_core_matmul/mma.cuh"
#include "cuda_check.h"
#include "fa3_bwd_config.h"
#include "fa3_bwd_layout.h"
#include "numeric.h"

namespace fa3bwd::kernel {

namespace {

constexpr int kThreads = 256;

// Eight bf16 of a 16-byte unit as fp32.
__device__ void unpack8(const uint4& u, float (&f)[8]) {
  const std::uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 v = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[k]));
    f[2 * k] = v.x, f[2 * k + 1] = v.y;
  }
}

template <int d>
__global__ void __launch_bounds__(kThreads)
    preprocess_kernel(const bf16* __restrict__ O, const bf16* __restrict__ dO, const float* __restrict__ L,
                      float* __restrict__ L2, float* __restrict__ D, float* __restrict__ dQ_acc,
                      int* __restrict__ flags, int N, int N_pad, std::int64_t rows_pad) {
  constexpr int kLanes = d / 8;  // per row: 16 at d = 128, 8 at d = 64 (a warp holds whole rows)
  const std::int64_t k = std::int64_t(blockIdx.x) * kThreads + threadIdx.x, row = k / kLanes;
  const int part = static_cast<int>(k % kLanes), col = 8 * part;
  const bool live = row < rows_pad;  // a row's lanes all take the same side: the shuffles stay whole
  const std::int64_t head = live ? row / N_pad : 0;
  const int n = live ? static_cast<int>(row % N_pad) : 0;
  float dot = 0.0f;
  if (live && n < N) {
    const std::int64_t at = (head * N + n) * d + col;
    float o[8], g[8];
    unpack8(__ldcs(reinterpret_cast<const uint4*>(O + at)), o);  // read once: streamed past the L2
    unpack8(__ldcs(reinterpret_cast<const uint4*>(dO + at)), g);
#pragma unroll
    for (int e = 0; e < 8; ++e) dot = fmaf(o[e], g[e], dot);
  }
#pragma unroll
  for (int off = kLanes / 2; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
  if (!live) return;
  // The row's 8 columns of the accumulator: row n % 64 of block (head, n / 64, chunk), whose
  // 64 floats the swizzle only permutes in units of 4, so columns col .. col + 7 zero them all.
  const int chunk = col / layout::kChunkCols, r = n % layout::kBlockRows, blocks = N_pad / layout::kBlockRows;
  float4* z = reinterpret_cast<float4*>(dQ_acc + layout::block_index(head, blocks, n / layout::kBlockRows, d, chunk) +
                                        r * layout::kChunkCols + col % layout::kChunkCols);
  z[0] = z[1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (r == 0 && col % layout::kChunkCols == 0)
    flags[layout::flag_index(head, blocks, n / layout::kBlockRows, d, chunk)] = 0;
  if (part == 0) {
    const float l = n < N ? L[head * N + n] : -INFINITY;
    L2[row] = l == -INFINITY ? INFINITY : l * ladder::kLog2e;
    D[row] = dot;
  }
}

template <int d>
__global__ void __launch_bounds__(kThreads) postprocess_kernel(const float* __restrict__ dQ_acc, bf16* __restrict__ dQ,
                                                               int N, int blocks, float scale, std::int64_t units) {
  const std::int64_t k = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (k >= units) return;
  const int col = static_cast<int>(k % (d / 8)) * 8;
  const std::int64_t row = k / (d / 8), head = row / N;
  const int n = static_cast<int>(row % N), r = n % layout::kBlockRows, c = col % layout::kChunkCols;
  const float* block = dQ_acc + layout::block_index(head, blocks, n / layout::kBlockRows, d, col / layout::kChunkCols);
  // Columns c .. c + 3 and c + 4 .. c + 7: two units, each where the swizzle put it.
  const float4 a = __ldcs(reinterpret_cast<const float4*>(block + layout::chunk_offset(r, c)));
  const float4 b = __ldcs(reinterpret_cast<const float4*>(block + layout::chunk_offset(r, c + 4)));
  uint4 u;
  u.x = tc::pack_bf16x2(a.x * scale, a.y * scale), u.y = tc::pack_bf16x2(a.z * scale, a.w * scale);
  u.z = tc::pack_bf16x2(b.x * scale, b.y * scale), u.w = tc::pack_bf16x2(b.z * scale, b.w * scale);
  *reinterpret_cast<uint4*>(dQ + row * d + col) = u;
}

}  // namespace

void launch_preprocess(const ladder::AttentionShape& s, const bf16* O, const bf16* dO, const float* L, float* L2,
                       float* D, float* dQ_acc, cudaStream_t stream) {
  const int N_pad = layout::padded_rows(s.N);
  const std::int64_t rows_pad = std::int64_t(s.heads()) * N_pad;
  // The flags follow the accumulator in the workspace (fa3_bwd.cpp, carve).
  int* flags = reinterpret_cast<int*>(dQ_acc + rows_pad * s.d);
  const unsigned blocks = static_cast<unsigned>(ladder::ceil_div(rows_pad * (s.d / 8), std::int64_t(kThreads)));
  if (s.d == 128)
    preprocess_kernel<128><<<blocks, kThreads, 0, stream>>>(O, dO, L, L2, D, dQ_acc, flags, s.N, N_pad, rows_pad);
  else
    preprocess_kernel<64><<<blocks, kThreads, 0, stream>>>(O, dO, L, L2, D, dQ_acc, flags, s.N, N_pad, rows_pad);
  CUDA_CHECK_LAUNCH();
}

void launch_postprocess(const ladder::AttentionShape& s, const float* dQ_acc, bf16* dQ, cudaStream_t stream) {
  const std::int64_t units = std::int64_t(s.rows()) * (s.d / 8);
  const int blocks_per_head = layout::padded_rows(s.N) / layout::kBlockRows;
  const unsigned blocks = static_cast<unsigned>(ladder::ceil_div(units, std::int64_t(kThreads)));
  if (s.d == 128)
    postprocess_kernel<128><<<blocks, kThreads, 0, stream>>>(dQ_acc, dQ, s.N, blocks_per_head, s.scale(), units);
  else
    postprocess_kernel<64><<<blocks, kThreads, 0, stream>>>(dQ_acc, dQ, s.N, blocks_per_head, s.scale(), units);
  CUDA_CHECK_LAUNCH();
}

}  // namespace fa3bwd::kernel
