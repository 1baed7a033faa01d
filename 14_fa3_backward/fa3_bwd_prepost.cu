// The two small kernels around chapter 14's main loop (any sm_80+ GPU compiles them; they
// run before and after it in the same stream).
//   preprocess   one warp per query row: D_i = rowsum(dO_i * O_i) in fp32, and L in log2
//                units, so the main loop's P = exp2(S scale log2(e) - L2) is one FMA and one
//                exp2. A row that saw no key (L = -inf: causal with N > N_kv) and the padding
//                rows up to N_pad get L2 = +inf: their P is exactly 0. D of the padding
//                rows is 0. The main kernel reads a query tile's rows of each at once (one
//                bulk copy), so both are padded to N_pad rows per head (128 rows: the
//                largest query tile).
//   postprocess  dQ = scale * dQ_acc, read from the accumulator's 64 x 64 blocks
//                (fa3_bwd_layout.h), written as bf16 rows.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "cuda_check.h"
#include "fa3_bwd_config.h"
#include "fa3_bwd_layout.h"
#include "numeric.h"

namespace fa3bwd::detail {

namespace {

template <int d>
__global__ void preprocess_kernel(const bf16* __restrict__ O, const bf16* __restrict__ dO, const float* __restrict__ L,
                                  float* __restrict__ L2, float* __restrict__ D, int N, int N_pad,
                                  std::int64_t rows_pad) {
  const std::int64_t row = std::int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows_pad) return;
  const int lane = threadIdx.x % 32;
  const std::int64_t head = row / N_pad;
  const int n = static_cast<int>(row % N_pad);
  float dot = 0.0f;
  if (n < N) {
    const std::int64_t base = (head * N + n) * d;
#pragma unroll
    for (int c = 2 * lane; c < d; c += 64) {  // two bf16 per lane and step: coalesced 128-byte rows
      const float2 o = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(O + base + c));
      const float2 g = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(dO + base + c));
      dot += o.x * g.x + o.y * g.y;
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
  if (lane == 0) {
    const float l = n < N ? L[head * N + n] : -INFINITY;
    L2[row] = l == -INFINITY ? INFINITY : l * ladder::kLog2e;
    D[row] = dot;
  }
}

template <int d>
__global__ void postprocess_kernel(const float* __restrict__ dQ_acc, bf16* __restrict__ dQ, int N, int blocks,
                                   float scale, std::int64_t pairs) {
  // One thread per two neighbouring columns of one row.
  const std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= pairs) return;
  const int col = static_cast<int>(k % (d / 2)) * 2;
  const std::int64_t row = k / (d / 2);
  const std::int64_t head = row / N;
  const int n = static_cast<int>(row % N), i = n / layout::kBlockRows, r = n % layout::kBlockRows;
  const float* block = dQ_acc + layout::block_index(head, blocks, i, d, col / layout::kChunkCols);
  const int c = col % layout::kChunkCols;
  const float2 v = *reinterpret_cast<const float2*>(block + layout::chunk_offset(r, c));  // c, c + 1: one unit
  *reinterpret_cast<__nv_bfloat162*>(dQ + row * d + col) = __floats2bfloat162_rn(v.x * scale, v.y * scale);
}

}  // namespace

void launch_preprocess(const ladder::AttentionShape& s, const bf16* O, const bf16* dO, const float* L, float* L2,
                       float* D, float* dQ_acc, cudaStream_t stream) {
  const int N_pad = layout::padded_rows(s.N);
  const std::int64_t rows_pad = std::int64_t(s.heads()) * N_pad;
  constexpr int kWarps = 8;
  const unsigned blocks = static_cast<unsigned>(ladder::ceil_div(rows_pad, std::int64_t(kWarps)));
  if (s.d == 128)
    preprocess_kernel<128><<<blocks, 32 * kWarps, 0, stream>>>(O, dO, L, L2, D, s.N, N_pad, rows_pad);
  else
    preprocess_kernel<64><<<blocks, 32 * kWarps, 0, stream>>>(O, dO, L, L2, D, s.N, N_pad, rows_pad);
  CUDA_CHECK_LAUNCH();
  // The accumulator and, after it, one flag per 64 x 64 block (fa3_bwd.cpp, carve).
  const std::size_t blocks_dq = std::size_t(rows_pad) * s.d / layout::kChunkFloats;
  CUDA_CHECK(cudaMemsetAsync(dQ_acc, 0, sizeof(float) * std::size_t(rows_pad) * s.d + sizeof(int) * blocks_dq, stream));
}

void launch_postprocess(const ladder::AttentionShape& s, const float* dQ_acc, bf16* dQ, cudaStream_t stream) {
  const std::int64_t pairs = std::int64_t(s.rows()) * (s.d / 2);
  const int blocks_per_head = layout::padded_rows(s.N) / layout::kBlockRows;
  const unsigned blocks = static_cast<unsigned>(ladder::ceil_div(pairs, std::int64_t(256)));
  if (s.d == 128)
    postprocess_kernel<128><<<blocks, 256, 0, stream>>>(dQ_acc, dQ, s.N, blocks_per_head, s.scale(), pairs);
  else
    postprocess_kernel<64><<<blocks, 256, 0, stream>>>(dQ_acc, dQ, s.N, blocks_per_head, s.scale(), pairs);
  CUDA_CHECK_LAUNCH();
}

}  // namespace fa3bwd::detail
