// The tile arithmetic chapters 05 (FA1) and 06 (FA2) share, so that the two
// kernels differ only in the algorithm: loop order, where O_i/l_i/m_i live, and
// how the running statistics rescale O_i. Device code only (.cu files).
//
// Layout in shared memory: a tile of R rows of a [N, d] head is R x (d + kPad)
// floats, row-major. The 4-float pad keeps every row 16-byte aligned (float4
// loads) and shifts consecutive rows by 4 banks, so the 16 rows a warp reads at
// once land in different banks. Rows past N are zero-filled; their scores are
// masked to -inf, so they add nothing.
//
// Register micro-tiles: each of the kThreads threads computes a TM x TN block of
// S = scale Q_i K_j^T and a TM x 4G block of P V_j from shared memory. Its rows
// are strided (rs + a*RS) rather than adjacent, which is what makes the reads of
// a warp conflict-free (see above). Reading TM + TN float4s feeds 4*TM*TN FMAs.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace fa_tiles {

constexpr int kThreads = 256;
constexpr int kPad = 4;

// Micro-tile shape per head dim: S micro-tile TM x TN, PV micro-tile TM rows x G
// float4s. Per step of k, a thread reads TM + TN floats of shared memory for
// TM * TN FMAs: 8 x 4 keeps the FMA units, not shared memory, the limit.
template <int d>
struct Micro {
  static constexpr int TM = d == 32 ? 4 : 8;
  static constexpr int TN = 4;
  static constexpr int G = d == 128 ? 2 : 1;
};
// Tiles are allocated with a multiple of kRowAlign rows (the largest TM).
constexpr int kRowAlign = 8;

__host__ __device__ constexpr int round_up(int x, int m) { return (x + m - 1) / m * m; }
__host__ __device__ constexpr int ceil_div(int x, int m) { return (x + m - 1) / m; }

// tile[r][:] = src[row0 + r][:] for r < valid, zero for valid <= r < rows.
// Consecutive threads take consecutive float4s of a row: coalesced global reads,
// conflict-free shared stores.
template <int d>
__device__ __forceinline__ void load_rows(float* tile, const float* src, int row0, int rows, int valid) {
  constexpr int kVec = d / 4;
  for (int idx = threadIdx.x; idx < rows * kVec; idx += kThreads) {
    const int r = idx / kVec, v = idx % kVec;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r < valid) x = reinterpret_cast<const float4*>(src + std::size_t(row0 + r) * d)[v];
    reinterpret_cast<float4*>(tile + r * (d + kPad))[v] = x;
  }
}

// One thread's TM x TN block of S_ij = scale * Q_i K_j^T, masked, stored to S
// (row stride ld_S). Rows rs + a*RS, columns cs + b*CS of the tile; i0, j0 are
// the tile's first query and key indices in the head. Masked to -inf: columns
// past the tile's kv_valid keys (the tail of N, and the padding), and, when
// causal, keys after the query.
template <int d, int TM, int TN>
__device__ __forceinline__ void scores(float* S, int ld_S, const float* Q_i, const float* K_j, int rs, int RS, int cs,
                                       int CS, int i0, int j0, int kv_valid, float scale, bool causal) {
  float acc[TM][TN] = {};
#pragma unroll 4
  for (int k = 0; k < d; k += 4) {
    float4 q[TM], kk[TN];
#pragma unroll
    for (int a = 0; a < TM; ++a) q[a] = *reinterpret_cast<const float4*>(Q_i + (rs + a * RS) * (d + kPad) + k);
#pragma unroll
    for (int b = 0; b < TN; ++b) kk[b] = *reinterpret_cast<const float4*>(K_j + (cs + b * CS) * (d + kPad) + k);
#pragma unroll
    for (int a = 0; a < TM; ++a)
#pragma unroll
      for (int b = 0; b < TN; ++b)
        acc[a][b] += q[a].x * kk[b].x + q[a].y * kk[b].y + q[a].z * kk[b].z + q[a].w * kk[b].w;
  }
#pragma unroll
  for (int a = 0; a < TM; ++a)
#pragma unroll
    for (int b = 0; b < TN; ++b) {
      const int r = rs + a * RS, c = cs + b * CS;
      const bool masked = c >= kv_valid || (causal && j0 + c > i0 + r);
      S[r * ld_S + c] = masked ? -INFINITY : scale * acc[a][b];
    }
}

// acc += one thread's TM x 4G block of P V_j: rows rs + a*RS, float4 columns
// xs + g*XS. P is B_c wide (row stride ld_P, B_c a multiple of 4), V_j has B_c
// rows; both are zero past the tile's valid keys, so the sum runs over the whole
// (padded) width.
template <int d, int TM, int G>
__device__ __forceinline__ void pv(float4 (&acc)[TM][G], const float* P, int ld_P, const float* V_j, int B_c, int rs,
                                   int RS, int xs, int XS) {
  for (int c = 0; c < B_c; c += 4) {
    float4 p[TM];
#pragma unroll
    for (int a = 0; a < TM; ++a) p[a] = *reinterpret_cast<const float4*>(P + (rs + a * RS) * ld_P + c);
#pragma unroll
    for (int cc = 0; cc < 4; ++cc) {
      float4 v[G];
#pragma unroll
      for (int g = 0; g < G; ++g) v[g] = reinterpret_cast<const float4*>(V_j + (c + cc) * (d + kPad))[xs + g * XS];
#pragma unroll
      for (int a = 0; a < TM; ++a) {
        const float w = cc == 0 ? p[a].x : cc == 1 ? p[a].y : cc == 2 ? p[a].z : p[a].w;
#pragma unroll
        for (int g = 0; g < G; ++g) {
          acc[a][g].x += w * v[g].x;
          acc[a][g].y += w * v[g].y;
          acc[a][g].z += w * v[g].z;
          acc[a][g].w += w * v[g].w;
        }
      }
    }
  }
}

// exp(x - m), where a row that has seen only masked keys (m = -inf) gives 0
// instead of exp(-inf - -inf) = NaN.
__device__ __forceinline__ float exp_shifted(float x, float m) { return m == -INFINITY ? 0.0f : expf(x - m); }

// Reductions over the 4 consecutive lanes that share a row.
__device__ __forceinline__ float max4(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffff, v, 2));
}
__device__ __forceinline__ float sum4(float v) {
  v += __shfl_xor_sync(0xffffffff, v, 1);
  return v + __shfl_xor_sync(0xffffffff, v, 2);
}

}  // namespace fa_tiles
