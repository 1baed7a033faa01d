// FlashAttention-2 forward (Dao, 2023), fp32 on CUDA cores. Outer loop over Q_i (the
// grid runs it: one thread block per row tile and head), inner loop over K_j, V_j.
// O_i, l_i, m_i stay on chip, O_i unnormalised: rescaled by alpha, divided once at the end.
#include <stdexcept>
#include <string>

#include "attention_tiles.cuh"
#include "cuda_check.h"
#include "device.h"
#include "dispatch.h"
#include "fa_forward.h"
#include "launch.h"

namespace fa2 {

namespace {

using namespace fa_tiles;
constexpr int kThreads = 256;
constexpr const char* kWho = "fa2::forward";

template <int d, class Tile>
__global__ void __launch_bounds__(kThreads, Tile::kBlocks)
    forward_kernel(const float* Q, const float* K, const float* V, float* O, float* L, int N, float scale,
                   bool causal) {
  constexpr int B_r = Tile::B_r, B_c = Tile::B_c, R = B_r, C = B_c;  // multiples of the micro-tiles
  constexpr int TM = ForwardMicro<d, R, C>::TM, TN = ForwardMicro<d, R, C>::TN, G = ForwardMicro<d>::G;
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
  const Micro<TM, 4 * G> o_tile = micro<TM, 4 * G>(t, RS, XS);
  float O_i[TM][4 * G] = {};
  float m_i[R / 64], l_i[R / 64];
  for (int u = 0; u < R / 64; ++u) m_i[u] = -INFINITY, l_i[u] = 0.0f;

  {
    const int i = blockIdx.x;  // outer loop: Q_i, one row tile per block (the grid runs it)
    const int i0 = i * B_r, q_valid = min(B_r, N - i0);
    load_rows<d, kThreads>(Q_i, Q_h, i0, R, q_valid);  // read once

    // Causal: key tiles that start after this row tile's last query are skipped.
    const int T_c = ceil_div(causal ? min(i0 + B_r, N) : N, B_c);
    for (int j = 0; j < T_c; ++j) {  // inner loop: K_j, V_j streamed
      const int j0 = j * B_c, kv_valid = min(B_c, N - j0);
      load_rows<d, kThreads>(K_j, K_h, j0, C, kv_valid);
      load_rows<d, kThreads>(V_j, V_h, j0, C, kv_valid);
      __syncthreads();

      // S_ij = scale Q_i K_j^T (masked), TM x TN micro-tiles.
      for (int x = t; x < RS * CS; x += kThreads)
        scores<d>(S, C + kPad, Q_i, K_j, micro<TM, TN>(x, RS, CS), Mask{i0, j0, kv_valid, causal}, scale);
      __syncthreads();

      // Online softmax, straight against the running statistics:
      //   m_new = max(m_i, rowmax(S_ij)), P~ = exp(S_ij - m_new)
      //   alpha = exp(m_i - m_new),       l_i = alpha l_i + rowsum(P~)
      // Row r belongs to lanes 4r..4r+3, each taking every 4th column.
      for (int u = 0; u < R / (kThreads / 4); ++u) {
        const int r = u * (kThreads / 4) + t / 4, lane = t % 4;
        float* S_r = S + r * (C + kPad);
        float m_tilde = -INFINITY;
        for (int c = lane; c < C; c += 4) m_tilde = fmaxf(m_tilde, S_r[c]);
        const float m_new = fmaxf(m_i[u], max4(m_tilde));
        float l_tilde = 0.0f;
        for (int c = lane; c < C; c += 4) {
          const float p = exp_shifted(S_r[c], m_new);
          S_r[c] = p;
          l_tilde += p;
        }
        const float alpha = exp_shifted(m_i[u], m_new);
        l_i[u] = alpha * l_i[u] + sum4(l_tilde);
        m_i[u] = m_new;
        if (lane == 0) row[r] = alpha;
      }
      __syncthreads();

      // O_i = diag(alpha) O_i + P~_ij V_j: one rescale, no division, no trip to HBM.
      float PV[TM][4 * G] = {};  // this tile's sum first: see "Accuracy at long N" in 07's README
      acc_A_B<1>(PV, S, C + kPad, V_j, d + kPad, o_tile, C);
      for (int a = 0; a < TM; ++a)
        for (int b = 0; b < 4 * G; ++b) O_i[a][b] = row[o_tile.row(a)] * O_i[a][b] + PV[a][b];
      __syncthreads();  // K_j, V_j, S and row[] are overwritten next step
    }

    // After the loop, once: O_i = diag(l_i)^-1 O_i, and L_i = m_i + log(l_i) for the backward pass.
    for (int u = 0; u < R / (kThreads / 4); ++u) {
      const int r = u * (kThreads / 4) + t / 4, lane = t % 4;
      if (lane == 0) row[r] = 1.0f / l_i[u];
      if (lane == 0 && r < q_valid) L_h[i0 + r] = m_i[u] + logf(l_i[u]);
    }
    __syncthreads();
    store_rows<d>(O_h, i0, q_valid, O_i, o_tile, [&](int r, int, float o) { return row[r] * o; });
  }
}

template <int d, class Tile>
void launch(const ladder::AttentionShape& s, const Tiles& tl, const float* Q, const float* K, const float* V, float* O,
            float* L, cudaStream_t stream) {
  ladder::allow_dynamic_smem(forward_kernel<d, Tile>, tl.smem_bytes, kWho);
  ladder::check_grid(kWho, tl.T_r, s.heads());
  const dim3 grid(static_cast<unsigned>(tl.T_r), static_cast<unsigned>(s.heads()));
  forward_kernel<d, Tile><<<grid, kThreads, tl.smem_bytes, stream>>>(Q, K, V, O, L, s.N, s.scale(), s.causal);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void forward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* L,
             cudaStream_t stream) {
  ladder::validate(s, kSupportedD);
  ladder::check_pointers(kWho, {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}, {"L", L, 4}}, 16);
  // The first tiles that fit this GPU (fa_forward.h); said once when they are not Config<d>.
  const std::size_t limit = ladder::smem_per_block_for_models();
  const Tiles tl = tiles(s, limit);
  if (tl.index != 0)
    ladder::say_once(ladder::fallback_line(std::string(kWho) + " (d = " + std::to_string(s.d) + ")", tile_options(s.d),
                                           0, tl.index, limit));
  if (s.d == 32) return launch<32, Config<32>>(s, tl, Q, K, V, O, L, stream);
  if (s.d == 64 && tl.index == 0) return launch<64, Config<64>>(s, tl, Q, K, V, O, L, stream);
  if (s.d == 64 && tl.index == 1) return launch<64, HalfKeys64>(s, tl, Q, K, V, O, L, stream);
  if (s.d == 64) return launch<64, Quarter64>(s, tl, Q, K, V, O, L, stream);
  if (tl.index == 0) return launch<128, Config<128>>(s, tl, Q, K, V, O, L, stream);
  if (tl.index == 1) return launch<128, HalfKeys128>(s, tl, Q, K, V, O, L, stream);
  launch<128, Quarter128>(s, tl, Q, K, V, O, L, stream);
}

}  // namespace fa2
