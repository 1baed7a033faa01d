// The fp32 tile engine of the FlashAttention chapters (05 FA1, 06 FA2, 07 backward):
// tiles staged in shared memory, register micro-tiles, and the three tile products
// they need. With the arithmetic here, the chapters' kernels differ only in the
// algorithm: loop order, where O_i, l_i, m_i live, how the statistics rescale O_i.
// Device code only (.cu files).
//
// Shared memory: a tile of R rows of a [N, d] head is R x (d + kPad) floats, row-major.
// The 4-float pad keeps every row 16-byte aligned (float4 accesses) and shifts
// consecutive rows by 4 banks, so float4 reads of 8 different rows by 8 lanes land
// in 8 different bank groups. Rows past N are zero-filled, and their scores masked.
//
// Register micro-tiles: a thread computes a TM x TN block of a tile product. Its rows
// and columns are strided (row r0 + a RS, column c0 + b CS) rather than adjacent: the
// lanes of a warp then read different rows of both operands in the same step, which
// is what keeps those reads free of bank conflicts. Per step of the sum a thread
// reads TM + TN float4s for 4 TM TN FMAs, so with TM x TN = 8 x 4 (or 4 x 8) the
// FMA units, not shared memory, are the limit.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "numeric.h"
#include "ptx_sm80.cuh"

namespace fa_tiles {

constexpr int kPad = 4;

using ladder::ceil_div;
using ladder::round_up;

__device__ __forceinline__ float at(const float4& v, int e) { return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w; }
__device__ __forceinline__ float4 lds4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ void sts4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }

// Where one thread's TM x TN micro-tile sits in a tile product. What "row" and
// "column" index depends on the product (see each one below).
template <int TM_, int TN_>
struct Micro {
  static constexpr int TM = TM_, TN = TN_;
  int r0, RS;  // rows r0 + a RS, a < TM
  int c0, CS;  // columns (or float4 columns) c0 + b CS
  __device__ int row(int a) const { return r0 + a * RS; }
  __device__ int col(int b) const { return c0 + b * CS; }
};
// The x-th micro-tile of an RS x CS grid of them, numbered along the rows.
template <int TM, int TN>
__device__ __forceinline__ Micro<TM, TN> micro(int x, int RS, int CS) {
  return {x / CS, RS, x % CS, CS};
}
// The block's kThreads threads laid over an M x N product, one micro-tile each, in
// warps of 4 x 8 threads: a warp's loads touch 4 rows of one operand and 8 of the
// other, each load one conflict-free wavefront (chapter 07).
template <int M, int N, int kThreads, int TM_ = 4>
struct WarpGrid {
  static constexpr int TM = TM_, RS = M / TM, CS = kThreads / RS, TN = N / CS;
  static_assert(RS * CS == kThreads && CS * TN == N, "the threads tile the product exactly");
  static_assert(RS % 4 == 0 && CS % 8 == 0 && TN % 4 == 0, "warps of 4 x 8 threads, float4 columns");
  using Tile = Micro<TM, TN>;
  __device__ static Tile tile() {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps_across = CS / 8;
    return {warp / warps_across * 4 + lane / 8, RS, warp % warps_across * 8 + lane % 8, CS};
  }
};

// The forward micro-tiles of chapters 05 and 06, per head dim: S_ij in TM x TN blocks,
// P~_ij V_j in TM x 4G blocks (G float4 columns). TM = 8 rows by TN = 4 keys reads 12
// float4s per 128 FMAs; at d = 32 the 128-row tiles of FA2 leave too few micro-tiles
// for 256 threads at TM = 8, so TM = 4 there. G = 2 at d = 128 keeps the O
// micro-tiles at one per thread (128 rows / 8 x 128 / 8 columns = 256). Measured on
// the H200 (results/06_fa2_forward): 29-30 TFLOP/s at d = 64 and 128, ~45% of fp32 peak.
// Smaller tiles (R rows, C keys: what a GPU with less shared memory runs in chapter 06) keep
// one S and one O micro-tile per thread of 256 by making them smaller: XS = d / 4G float4
// columns of O across, 256 / XS row groups down, so TM = R XS / 256 and TN = C / XS.
template <int d, int R = 128, int C = (d == 32 ? 32 : 64)>
struct ForwardMicro {
  static constexpr int G = d == 128 ? 2 : 1;
  static constexpr int XS = d / 4 / G;
  static constexpr int TM = R * XS / 256;
  static constexpr int TN = C / XS;
  static_assert(TM >= 1 && TN >= 1 && C % XS == 0, "one S and one O micro-tile per thread of 256");
};

// tile[r][:] = src[row0 + r][:] for r < valid, zero for valid <= r < rows (row stride
// d + kPad). Consecutive threads take consecutive float4s of a row: coalesced global
// reads, conflict-free shared stores.
template <int d, int kThreads>
__device__ __forceinline__ void load_rows(float* tile, const float* src, int row0, int rows, int valid) {
  constexpr int kVec = d / 4;
  for (int idx = threadIdx.x; idx < rows * kVec; idx += kThreads) {
    const int r = idx / kVec, v = idx % kVec;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r < valid) x = reinterpret_cast<const float4*>(src + std::size_t(row0 + r) * d)[v];
    sts4(tile + r * (d + kPad) + 4 * v, x);
  }
}

// The same with cp.async (chapter 07): global -> shared without passing through
// registers or stalling the thread, so a tile can be refilled while the block computes
// on the others. tile[r][:] = src[row0 + r][:] for the ROWS rows, zeros past N (a
// source size of 0 writes zeros). Complete with cp_async_wait_all() and a barrier.
__device__ __forceinline__ void cp_async(float* dst, const float* src, int bytes, bool valid) {
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if (bytes == 16)
    tc::cp_async_16(s, src, valid);
  else
    tc::cp_async_4(s, src, valid);
}
using tc::cp_async_wait_all;
template <int ROWS, int d, int kThreads>
__device__ __forceinline__ void load_rows_async(float* tile, const float* src, int row0, int N) {
  constexpr int kVec = d / 4;
  static_assert(ROWS * kVec % kThreads == 0, "every thread copies the same number of float4s");
#pragma unroll
  for (int u = 0; u < ROWS * kVec / kThreads; ++u) {
    const int idx = threadIdx.x + u * kThreads, r = idx / kVec, v = idx % kVec;
    const bool valid = row0 + r < N;
    cp_async(tile + r * (d + kPad) + 4 * v, src + std::size_t(valid ? row0 + r : 0) * d + 4 * v, 16, valid);
  }
}
// One float per row (L_i, D_i), zeros past N.
template <int ROWS>
__device__ __forceinline__ void load_row_values_async(float* dst, const float* src, int row0, int N) {
  const int r = threadIdx.x;
  if (r < ROWS) cp_async(dst + r, src + (row0 + r < N ? row0 + r : 0), 4, row0 + r < N);
}

// ---- The three tile products, all from shared memory, all row-major operands ----

// acc += A B^T  (S = Q_i K_j^T, dP = dO_i V_j^T): the sum runs along the rows of both
// operands, float4 reads along k. Micro-tile rows are rows of A, columns rows of B.
// kGrouped: each float4 pair as acc += (a.x b.x + a.y b.y + a.z b.z + a.w b.w), whose
// products do not wait on acc (FA2 needs 180 registers at d = 128 this way, 210
// chained, and spills at d = 64); chained: four FFMAs into acc, a fifth fewer
// instructions, which chapter 07's recomputation wants (grouped cost it 5-9%, H200).
template <int K, int kUnroll = 4, bool kGrouped = true, class T>
__device__ __forceinline__ void acc_A_Bt(float (&acc)[T::TM][T::TN], const float* A, int lda, const float* B, int ldb,
                                         const T& t) {
#pragma unroll(kUnroll)
  for (int k = 0; k < K; k += 4) {
    float4 a[T::TM], b[T::TN];
#pragma unroll
    for (int i = 0; i < T::TM; ++i) a[i] = lds4(A + t.row(i) * lda + k);
#pragma unroll
    for (int j = 0; j < T::TN; ++j) b[j] = lds4(B + t.col(j) * ldb + k);
#pragma unroll
    for (int i = 0; i < T::TM; ++i)
#pragma unroll
      for (int j = 0; j < T::TN; ++j) {
        if constexpr (kGrouped) {
          acc[i][j] += a[i].x * b[j].x + a[i].y * b[j].y + a[i].z * b[j].z + a[i].w * b[j].w;
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][j] = fmaf(at(a[i], e), at(b[j], e), acc[i][j]);
        }
      }
  }
}

// acc += A B  (P~_ij V_j, dQ_i += dS_ij K_j), summed over k < K (a multiple of 4).
// Micro-tile rows are rows of A; column b of the micro-tile is float4 column
// t.col(b / 4) of B, element b % 4: TN / 4 float4s of B per step.
template <int kUnroll = 2, class T>
__device__ __forceinline__ void acc_A_B(float (&acc)[T::TM][T::TN], const float* A, int lda, const float* B, int ldb,
                                        const T& t, int K) {
#pragma unroll(kUnroll)
  for (int k = 0; k < K; k += 4) {
    float4 a[T::TM];
#pragma unroll
    for (int i = 0; i < T::TM; ++i) a[i] = lds4(A + t.row(i) * lda + k);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      float4 b[T::TN / 4];
#pragma unroll
      for (int g = 0; g < T::TN / 4; ++g) b[g] = lds4(B + (k + kk) * ldb + 4 * t.col(g));
#pragma unroll
      for (int i = 0; i < T::TM; ++i)
#pragma unroll
        for (int g = 0; g < T::TN / 4; ++g)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][4 * g + e] = fmaf(at(a[i], kk), at(b[g], e), acc[i][4 * g + e]);
    }
  }
}

// acc += A^T B  (dV_j += P_ij^T dO_i, dK_j += dS_ij^T Q_i): the sum runs down the
// columns of both. Each step reads one float4 of a row of A (result rows 4 r0 .. 4 r0
// + 3: adjacent, TM = 4) and TN / 4 float4s of the same row of B (float4 columns
// t.col(g), as in acc_A_B).
template <int K, int kUnroll = 4, class T>
__device__ __forceinline__ void acc_At_B(float (&acc)[T::TM][T::TN], const float* A, int lda, const float* B, int ldb,
                                         const T& t) {
  static_assert(T::TM == 4, "one float4 of A per step");
#pragma unroll(kUnroll)
  for (int k = 0; k < K; ++k) {
    const float4 a = lds4(A + k * lda + 4 * t.r0);
    float4 b[T::TN / 4];
#pragma unroll
    for (int g = 0; g < T::TN / 4; ++g) b[g] = lds4(B + k * ldb + 4 * t.col(g));
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int g = 0; g < T::TN / 4; ++g)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][4 * g + e] = fmaf(at(a, i), at(b[g], e), acc[i][4 * g + e]);
  }
}

// f(r, c, v) for each float4 of this thread's micro-tile of an A B product: rows
// r = t.row(a) < rows, float4 columns c = 4 t.col(g) (as in acc_A_B), v = those 4 values.
template <class T, class F>
__device__ __forceinline__ void for_each_float4(const float (&acc)[T::TM][T::TN], const T& t, int rows, F f) {
#pragma unroll
  for (int a = 0; a < T::TM; ++a) {
    const int r = t.row(a);
    if (r >= rows) continue;
#pragma unroll
    for (int g = 0; g < T::TN / 4; ++g)
      f(r, 4 * t.col(g), make_float4(acc[a][4 * g], acc[a][4 * g + 1], acc[a][4 * g + 2], acc[a][4 * g + 3]));
  }
}
// O_h[i0 + r][c] = f(r, c, acc[a][b]) for this thread's micro-tile, rows r < q_valid: 16-byte stores.
template <int d, class T, class F>
__device__ __forceinline__ void store_rows(float* O_h, int i0, int q_valid, const float (&acc)[T::TM][T::TN],
                                           const T& t, F f) {
  for_each_float4(acc, t, q_valid, [&](int r, int c, float4 v) {
    sts4(O_h + std::size_t(i0 + r) * d + c,
         make_float4(f(r, c, v.x), f(r, c + 1, v.y), f(r, c + 2, v.z), f(r, c + 3, v.w)));
  });
}
__device__ __forceinline__ float4 scaled(float s, float4 v) { return make_float4(s * v.x, s * v.y, s * v.z, s * v.w); }

// ---- Masks and the softmax pieces ----

// Which (query, key) pairs of the tile pair (Q_i, K_j) count: the key is one of the
// tile's kv_valid real keys (not past N, not the zero rows that pad the tile to whole
// micro-tiles) and, when causal, not after the query. i0, j0: the first query and key.
struct Mask {
  int i0, j0, kv_valid;
  bool causal;
  __device__ bool visible(int r, int c) const { return c < kv_valid && (!causal || j0 + c <= i0 + r); }
};

// S_ij = scale Q_i K_j^T for one micro-tile, masked to -inf, into S (row stride ld_S).
template <int d, class T>
__device__ __forceinline__ void scores(float* S, int ld_S, const float* Q_i, const float* K_j, const T& t,
                                       const Mask& mask, float scale) {
  float acc[T::TM][T::TN] = {};
  acc_A_Bt<d>(acc, Q_i, d + kPad, K_j, d + kPad, t);
#pragma unroll
  for (int a = 0; a < T::TM; ++a)
#pragma unroll
    for (int b = 0; b < T::TN; ++b)
      S[t.row(a) * ld_S + t.col(b)] = mask.visible(t.row(a), t.col(b)) ? scale * acc[a][b] : -INFINITY;
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
