// FlashAttention-2 forward (Dao, 2023), fp32 on CUDA cores.
// Outer loop over Q_i (one thread block per row tile and head: the grid runs it),
// inner loop streams K_j, V_j. O_i, l_i, m_i stay on chip for the whole inner loop:
// O_i in registers, unnormalised, rescaled by one factor alpha per step and
// divided by l_i once at the end; L = m + log(l) is all that goes back to HBM.
#include <stdexcept>

#include "attention_tiles.cuh"
#include "cuda_check.h"
#include "fa_forward.h"

namespace fa2 {

namespace {

using namespace fa_tiles;

// Tile sizes per head dim, chosen (not derived): each of the 256 threads owns exactly
// one S and one O micro-tile, and kBlocks blocks share an SM.
template <int d>
struct Config;
template <>
struct Config<32> {
  static constexpr int B_r = 128, B_c = 32, kBlocks = 2;
};
template <>
struct Config<64> {
  static constexpr int B_r = 128, B_c = 64, kBlocks = 2;
};
template <>
struct Config<128> {
  static constexpr int B_r = 128, B_c = 64, kBlocks = 1;
};

// Q_i, K_j, V_j, the S_ij / P~_ij tile and one float per row.
template <int d>
constexpr int smem_bytes() {
  constexpr int R = Config<d>::B_r, C = Config<d>::B_c;
  return 4 * ((R + 2 * C) * (d + kPad) + R * (C + kPad) + R);
}

template <int d>
__global__ void __launch_bounds__(kThreads, Config<d>::kBlocks)
    fa2_forward_kernel(const float* Q, const float* K, const float* V, float* O, float* L, int N, float scale,
                       bool causal) {
  constexpr int B_r = Config<d>::B_r, B_c = Config<d>::B_c;
  constexpr int R = B_r, C = B_c;  // tile extents: already multiples of the micro-tiles
  constexpr int TM = Micro<d>::TM, TN = Micro<d>::TN, G = Micro<d>::G;
  constexpr int RS = R / TM, CS = C / TN, XS = d / 4 / G;
  static_assert(RS * CS == kThreads && RS * XS == kThreads, "one S and one O micro-tile per thread");

  extern __shared__ float4 smem[];
  float* Q_i = reinterpret_cast<float*>(smem);  // [R][d + kPad]
  float* K_j = Q_i + R * (d + kPad);            // [C][d + kPad]
  float* V_j = K_j + C * (d + kPad);            // [C][d + kPad]
  float* S = V_j + C * (d + kPad);              // [R][C + kPad]: S_ij, then P~_ij in place
  float* row = S + R * (C + kPad);              // [R]: alpha each step, 1 / l_i at the end

  const int t = threadIdx.x;
  const std::size_t head = blockIdx.y;
  const float* Q_h = Q + head * N * d;
  const float* K_h = K + head * N * d;
  const float* V_h = V + head * N * d;
  float* O_h = O + head * N * d;
  float* L_h = L + head * N;

  // O_i, l_i, m_i live on chip: this thread's O micro-tile, and the statistics of
  // the rows whose softmax it helps with (4 lanes per row, R / 64 rows each).
  float4 O_i[TM][G] = {};
  float m_i[R / 64], l_i[R / 64];
  for (int u = 0; u < R / 64; ++u) m_i[u] = -INFINITY, l_i[u] = 0.0f;

  for (int i = blockIdx.x; i < blockIdx.x + 1; ++i) {  // outer loop: Q_i, one row tile per block
    const int i0 = i * B_r, q_valid = min(B_r, N - i0);
    load_rows<d>(Q_i, Q_h, i0, R, q_valid);  // read once

    // Causal: key tiles that start after this row tile's last query are skipped.
    const int T_c = ceil_div(causal ? min(i0 + B_r, N) : N, B_c);
    for (int j = 0; j < T_c; ++j) {  // inner loop: K_j, V_j streamed
      const int j0 = j * B_c, kv_valid = min(B_c, N - j0);
      load_rows<d>(K_j, K_h, j0, C, kv_valid);
      load_rows<d>(V_j, V_h, j0, C, kv_valid);
      __syncthreads();

      // S_ij = scale Q_i K_j^T (masked), one TM x TN micro-tile per thread.
      for (int x = t; x < RS * CS; x += kThreads)
        scores<d, TM, TN>(S, C + kPad, Q_i, K_j, x / CS, RS, x % CS, CS, i0, j0, kv_valid, scale, causal);
      __syncthreads();

      // Online softmax, straight against the running statistics:
      //   m_new = max(m_i, rowmax(S_ij)), P~ = exp(S_ij - m_new)
      //   alpha = exp(m_i - m_new),       l_i = alpha l_i + rowsum(P~)
      // Row r belongs to lanes 4r..4r+3, each taking every 4th column.
      for (int r0 = 0; r0 < R; r0 += kThreads / 4) {
        const int r = r0 + t / 4, q = t % 4, u = r0 / (kThreads / 4);
        float* S_r = S + r * (C + kPad);
        float m_tile = -INFINITY;
        for (int c = q; c < C; c += 4) m_tile = fmaxf(m_tile, S_r[c]);
        const float m_new = fmaxf(m_i[u], max4(m_tile));
        float l_tile = 0.0f;
        for (int c = q; c < C; c += 4) {
          const float p = exp_shifted(S_r[c], m_new);
          S_r[c] = p;
          l_tile += p;
        }
        const float alpha = exp_shifted(m_i[u], m_new);
        l_i[u] = alpha * l_i[u] + sum4(l_tile);
        m_i[u] = m_new;
        if (q == 0) row[r] = alpha;
      }
      __syncthreads();

      // O_i = diag(alpha) O_i + P~_ij V_j: one rescale, no division, no trip to HBM.
      for (int x = t; x < RS * XS; x += kThreads) {
        const int rs = x / XS, xs = x % XS;
        for (int a = 0; a < TM; ++a) {
          const float f = row[rs + a * RS];
          for (int g = 0; g < G; ++g)
            O_i[a][g] = make_float4(f * O_i[a][g].x, f * O_i[a][g].y, f * O_i[a][g].z, f * O_i[a][g].w);
        }
        pv<d, TM, G>(O_i, S, C + kPad, V_j, C, rs, RS, xs, XS);
      }
      __syncthreads();  // K_j, V_j, S and row[] are overwritten next step
    }

    // After the loop, once: O_i = diag(l_i)^-1 O_i, and L_i = m_i + log(l_i) for the backward pass.
    for (int r0 = 0; r0 < R; r0 += kThreads / 4) {
      const int r = r0 + t / 4, q = t % 4, u = r0 / (kThreads / 4);
      if (q == 0) row[r] = 1.0f / l_i[u];
      if (q == 0 && r < q_valid) L_h[i0 + r] = m_i[u] + logf(l_i[u]);
    }
    __syncthreads();
    for (int x = t; x < RS * XS; x += kThreads) {
      const int rs = x / XS, xs = x % XS;
      for (int a = 0; a < TM; ++a) {
        const int r = rs + a * RS;
        if (r >= q_valid) continue;
        const float f = row[r];
        for (int g = 0; g < G; ++g)
          reinterpret_cast<float4*>(O_h + std::size_t(i0 + r) * d)[xs + g * XS] =
              make_float4(f * O_i[a][g].x, f * O_i[a][g].y, f * O_i[a][g].z, f * O_i[a][g].w);
      }
    }
  }
}

template <int d>
void launch(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* L,
            cudaStream_t stream) {
  static const bool configured = [] {  // above 48 KB of shared memory a kernel must opt in
    CUDA_CHECK(
        cudaFuncSetAttribute(fa2_forward_kernel<d>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes<d>()));
    return true;
  }();
  (void)configured;
  const dim3 grid(ceil_div(s.N, Config<d>::B_r), static_cast<unsigned>(s.heads()));
  fa2_forward_kernel<d><<<grid, kThreads, smem_bytes<d>(), stream>>>(Q, K, V, O, L, s.N, s.scale(), s.causal);
  CUDA_CHECK_LAUNCH();
}

template <int d>
Tiles tiles_for(int N) {
  return {Config<d>::B_r, Config<d>::B_c, ceil_div(N, Config<d>::B_r), ceil_div(N, Config<d>::B_c)};
}

}  // namespace

Tiles tiles(const ladder::AttentionShape& s) {
  ladder::validate(s, {32, 64, 128});
  switch (s.d) {
    case 32: return tiles_for<32>(s.N);
    case 64: return tiles_for<64>(s.N);
    default: return tiles_for<128>(s.N);
  }
}

void forward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* L,
             cudaStream_t stream) {
  ladder::validate(s, {32, 64, 128});
  if (s.heads() > 65535) throw std::invalid_argument("fa2::forward: B*H must be <= 65535 (grid.y)");
  switch (s.d) {
    case 32: return launch<32>(s, Q, K, V, O, L, stream);
    case 64: return launch<64>(s, Q, K, V, O, L, stream);
    default: return launch<128>(s, Q, K, V, O, L, stream);
  }
}

}  // namespace fa2
