// The FA1-vs-FA2 normalisation in fp32 on CUDA cores: chapter 06's FA2 kernel, line for
// line (its tiles, common/attention_tiles.cuh, and its Config<d>), with the one
// compile-time switch the tensor-core kernel has. Only the normalisation differs between
// the two instantiations, so their time ratio is the price of FA1's normalisation where a
// matmul FLOP costs what any other FLOP costs. (Chapter 05 against 06 also measures the
// loop order and FA1's HBM round trips; this isolates the arithmetic.)
#include <stdexcept>
#include <string>

#include "06_fa2_forward/fa_forward.h"
#include "attention_tiles.cuh"
#include "cuda_check.h"
#include "fa2_tc.h"
#include "launch.h"

namespace fa2tc {

namespace {

using namespace fa_tiles;
using fa2::Config;
constexpr int kThreads = 256;
constexpr const char* kWho = "fa2tc::forward_fp32";

// Chapter 06's shared memory plus two more floats per row (FA1's l_i alpha and 1 / l_new).
template <int d>
constexpr std::size_t fp32_smem_bytes() {
  return fa2::smem_bytes(d, Config<d>::B_r, Config<d>::B_c) + 2 * 4 * Config<d>::B_r;
}

template <int d, Normalisation kNorm>
__global__ void __launch_bounds__(kThreads, Config<d>::kBlocks)
    fp32_forward_kernel(const float* Q, const float* K, const float* V, float* O, float* L, int N, float scale,
                        bool causal) {
  constexpr int B_r = Config<d>::B_r, B_c = Config<d>::B_c, R = B_r, C = B_c;
  constexpr int TM = ForwardMicro<d>::TM, TN = ForwardMicro<d>::TN, G = ForwardMicro<d>::G;
  constexpr int RS = R / TM, CS = C / TN, XS = d / 4 / G;
  static_assert(RS * CS == kThreads && RS * XS == kThreads, "one S and one O micro-tile per thread");

  extern __shared__ float4 smem[];
  float* Q_i = reinterpret_cast<float*>(smem);
  float* K_j = Q_i + R * (d + kPad);
  float* V_j = K_j + C * (d + kPad);
  float* S = V_j + C * (d + kPad);
  float* row = S + R * (C + kPad);  // FA2: alpha. FA1: l_i alpha, applied before P V ...
  float* row_inv = row + R;         // ... FA1: 1 / l_new, after it

  const int t = threadIdx.x;
  const std::size_t head = blockIdx.y;
  const float* Q_h = Q + head * N * d;
  const float* K_h = K + head * N * d;
  const float* V_h = V + head * N * d;
  float* O_h = O + head * N * d;
  float* L_h = L + head * N;

  const Micro<TM, 4 * G> o_tile = micro<TM, 4 * G>(t, RS, XS);
  float O_i[TM][4 * G] = {};
  float m_i[R / 64], l_i[R / 64];
  for (int u = 0; u < R / 64; ++u) m_i[u] = -INFINITY, l_i[u] = 0.0f;

  const int i0 = blockIdx.x * B_r, q_valid = min(B_r, N - i0);
  load_rows<d, kThreads>(Q_i, Q_h, i0, R, q_valid);
  const int T_c = ceil_div(causal ? min(i0 + B_r, N) : N, B_c);
  for (int j = 0; j < T_c; ++j) {
    const int j0 = j * B_c, kv_valid = min(B_c, N - j0);
    load_rows<d, kThreads>(K_j, K_h, j0, C, kv_valid);
    load_rows<d, kThreads>(V_j, V_h, j0, C, kv_valid);
    __syncthreads();
    for (int x = t; x < RS * CS; x += kThreads)
      scores<d>(S, C + kPad, Q_i, K_j, micro<TM, TN>(x, RS, CS), Mask{i0, j0, kv_valid, causal}, scale);
    __syncthreads();

    for (int u = 0; u < R / (kThreads / 4); ++u) {
      const int r = u * (kThreads / 4) + t / 4, lane = t % 4;
      float* S_r = S + r * (C + kPad);
      float m_tilde = -INFINITY;
      for (int c = lane; c < C; c += 4) m_tilde = fmaxf(m_tilde, S_r[c]);
      m_tilde = max4(m_tilde);
      const float m_new = fmaxf(m_i[u], m_tilde);
      if constexpr (kNorm == Normalisation::FA2) {  // chapter 06, unchanged
        float l_tilde = 0.0f;
        for (int c = lane; c < C; c += 4) {
          const float p = exp_shifted(S_r[c], m_new);
          S_r[c] = p;
          l_tilde += p;
        }
        const float alpha = exp_shifted(m_i[u], m_new);
        l_i[u] = alpha * l_i[u] + sum4(l_tilde);
        if (lane == 0) row[r] = alpha;
      } else {  // FA1 (chapter 05's formulas): P~ against the tile's own max, then beta
        const float alpha = exp_shifted(m_i[u], m_new), beta = exp_shifted(m_tilde, m_new);
        float l_tilde = 0.0f;
        for (int c = lane; c < C; c += 4) {
          const float p = exp_shifted(S_r[c], m_tilde);
          S_r[c] = beta * p;  // beta P~_ij: FA1's beta on P~_ij V_j
          l_tilde += p;
        }
        const float l_new = alpha * l_i[u] + beta * sum4(l_tilde);
        if (lane == 0) row[r] = l_i[u] * alpha, row_inv[r] = l_new > 0.0f ? 1.0f / l_new : 0.0f;
        l_i[u] = l_new;
      }
      m_i[u] = m_new;
    }
    __syncthreads();

    // FA2: O_i = diag(alpha) O_i + P~ V_j.  FA1: O_i = diag(l_new)^-1 (diag(l_i alpha) O_i + beta P~ V_j).
    for (int a = 0; a < TM; ++a)
      for (int b = 0; b < 4 * G; ++b) O_i[a][b] *= row[o_tile.row(a)];
    acc_A_B<1>(O_i, S, C + kPad, V_j, d + kPad, o_tile, C);
    if constexpr (kNorm == Normalisation::FA1)
      for (int a = 0; a < TM; ++a)
        for (int b = 0; b < 4 * G; ++b) O_i[a][b] *= row_inv[o_tile.row(a)];
    __syncthreads();
  }

  for (int u = 0; u < R / (kThreads / 4); ++u) {
    const int r = u * (kThreads / 4) + t / 4, lane = t % 4;
    if (lane == 0) row[r] = kNorm == Normalisation::FA2 ? 1.0f / l_i[u] : 1.0f;  // FA1: already normalised
    if (lane == 0 && r < q_valid) L_h[i0 + r] = m_i[u] + logf(l_i[u]);
  }
  __syncthreads();
  store_rows<d>(O_h, i0, q_valid, O_i, o_tile, [&](int r, int, float o) { return row[r] * o; });
}

template <int d, Normalisation kNorm>
void launch_fp32(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* L,
                 cudaStream_t stream) {
  const int T_r = ceil_div(s.N, Config<d>::B_r);
  ladder::check_grid(kWho, T_r, s.heads());
  ladder::allow_dynamic_smem(fp32_forward_kernel<d, kNorm>, fp32_smem_bytes<d>(), kWho);
  const dim3 grid(static_cast<unsigned>(T_r), static_cast<unsigned>(s.heads()));
  fp32_forward_kernel<d, kNorm>
      <<<grid, kThreads, fp32_smem_bytes<d>(), stream>>>(Q, K, V, O, L, s.N, s.scale(), s.causal);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void forward_fp32(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* L,
                  Normalisation norm, cudaStream_t stream) {
  ladder::validate(s, kSupportedD);  // H_kv = H, N_kv = N: chapter 06's problem
  ladder::check_pointers(kWho, {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}, {"L", L, 4}}, 16);
  const bool fa2 = norm == Normalisation::FA2;
  if (s.d == 128)
    return fa2 ? launch_fp32<128, Normalisation::FA2>(s, Q, K, V, O, L, stream)
               : launch_fp32<128, Normalisation::FA1>(s, Q, K, V, O, L, stream);
  return fa2 ? launch_fp32<64, Normalisation::FA2>(s, Q, K, V, O, L, stream)
             : launch_fp32<64, Normalisation::FA1>(s, Q, K, V, O, L, stream);
}

}  // namespace fa2tc
