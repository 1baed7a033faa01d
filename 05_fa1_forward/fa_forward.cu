// FlashAttention-1 forward (Dao et al., 2022), Algorithm 1, fp32 on CUDA cores. Outer
// loop over K_j, V_j, inner loop over Q_i; one thread block per head. O_i, l_i, m_i
// live in HBM, O_i normalised at every step: x l_i, rescaled by alpha and beta, / l_new.
#include <stdexcept>
#include <string>

#include "attention_tiles.cuh"
#include "cuda_check.h"
#include "device.h"
#include "dispatch.h"
#include "fa_forward.h"
#include "launch.h"

namespace fa1 {

namespace {

using namespace fa_tiles;
constexpr int kThreads = 256;
constexpr const char* kWho = "fa1::forward";

template <int d>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const float* Q, const float* K, const float* V, float* O, float* l, float* m, int N, float scale,
                   bool causal, int B_r, int B_c) {
  const int R = round_up(B_r, kRowAlign), C = round_up(B_c, 4);  // tile extents, padded for the micro-tiles
  constexpr int TM = ForwardMicro<d>::TM, TN = ForwardMicro<d>::TN, G = ForwardMicro<d>::G;
  const int RS = R / TM, CS = C / TN, XS = d / 4 / G;

  extern __shared__ float4 smem[];
  float* Q_i = reinterpret_cast<float*>(smem);  // [R][d + kPad]
  float* K_j = Q_i + R * (d + kPad);            // [C][d + kPad]
  float* V_j = K_j + C * (d + kPad);            // [C][d + kPad]
  float* S = V_j + C * (d + kPad);              // [R][C + kPad]: S_ij, then P~_ij in place
  float* O_i = S + R * (C + kPad);              // [R][d + kPad]: O_i as read from HBM
  float* a_row = O_i + R * (d + kPad);          // [R]: factor on the old O_i
  float* b_row = a_row + R;                     // [R]: factor on P~_ij V_j

  const int t = threadIdx.x;
  const std::size_t head = blockIdx.x;
  const float* Q_h = Q + head * N * d;
  const float* K_h = K + head * N * d;
  const float* V_h = V + head * N * d;
  float* O_h = O + head * N * d;
  float* l_h = l + head * N;
  float* m_h = m + head * N;

  // Line 2: O = 0, l = 0, m = -inf in HBM (this block owns its head).
  for (int x = t; x < N * d; x += kThreads) O_h[x] = 0.0f;
  for (int x = t; x < N; x += kThreads) l_h[x] = 0.0f, m_h[x] = -INFINITY;
  __syncthreads();

  const int T_r = ceil_div(N, B_r), T_c = ceil_div(N, B_c);
  for (int j = 0; j < T_c; ++j) {  // outer loop: K_j, V_j, loaded once
    const int j0 = j * B_c, kv_valid = min(B_c, N - j0);
    load_rows<d, kThreads>(K_j, K_h, j0, C, kv_valid);
    load_rows<d, kThreads>(V_j, V_h, j0, C, kv_valid);

    // Causal: row tiles that end before this key tile's first key see none of it.
    for (int i = causal ? j0 / B_r : 0; i < T_r; ++i) {  // inner loop: Q_i, O_i, l_i, m_i from HBM
      const int i0 = i * B_r, q_valid = min(B_r, N - i0);
      load_rows<d, kThreads>(Q_i, Q_h, i0, R, q_valid);
      load_rows<d, kThreads>(O_i, O_h, i0, R, q_valid);
      __syncthreads();

      // S_ij = scale Q_i K_j^T (masked), TM x TN micro-tiles.
      for (int x = t; x < RS * CS; x += kThreads)
        scores<d>(S, C + kPad, Q_i, K_j, micro<TM, TN>(x, RS, CS), Mask{i0, j0, kv_valid, causal}, scale);
      __syncthreads();

      // Statistics of this block, then the merge with the running ones from HBM:
      //   m~ = rowmax(S_ij), P~ = exp(S_ij - m~), l~ = rowsum(P~)
      //   m_new = max(m_i, m~), alpha = exp(m_i - m_new), beta = exp(m~ - m_new), l_new = alpha l_i + beta l~
      // Row r belongs to lanes 4r..4r+3, each taking every 4th column.
      for (int u = 0; u < ceil_div(R, kThreads / 4); ++u) {
        const int r = u * (kThreads / 4) + t / 4, lane = t % 4;
        if (r >= R) break;  // the whole warp: R is a multiple of kRowAlign, a warp's 8 rows agree
        float* S_r = S + r * (C + kPad);
        float m_tilde = -INFINITY;
        for (int c = lane; c < C; c += 4) m_tilde = fmaxf(m_tilde, S_r[c]);
        m_tilde = max4(m_tilde);
        float l_tilde = 0.0f;
        for (int c = lane; c < C; c += 4) {
          const float p = exp_shifted(S_r[c], m_tilde);
          S_r[c] = p;
          l_tilde += p;
        }
        l_tilde = sum4(l_tilde);
        if (lane == 0 && r < q_valid) {
          const float m_old = m_h[i0 + r], l_old = l_h[i0 + r], m_new = fmaxf(m_old, m_tilde);
          const float alpha = exp_shifted(m_old, m_new), beta = exp_shifted(m_tilde, m_new);
          const float l_new = alpha * l_old + beta * l_tilde;
          a_row[r] = l_old * alpha / l_new, b_row[r] = beta / l_new;  // undo l_i, rescale, renormalise
          l_h[i0 + r] = l_new, m_h[i0 + r] = m_new;                   // line 13: l_i, m_i back to HBM
        }
      }
      __syncthreads();

      // Line 12: O_i = diag(l_new)^-1 (diag(l_i) alpha O_i + beta P~_ij V_j), back to HBM.
      for (int x = t; x < RS * XS; x += kThreads) {
        const Micro<TM, 4 * G> o_tile = micro<TM, 4 * G>(x, RS, XS);
        float PV[TM][4 * G] = {};
        acc_A_B<1>(PV, S, C + kPad, V_j, d + kPad, o_tile, C);
        store_rows<d>(O_h, i0, q_valid, PV, o_tile,
                      [&](int r, int c, float pv) { return a_row[r] * O_i[r * (d + kPad) + c] + b_row[r] * pv; });
      }
      __syncthreads();  // Q_i, O_i, S (and, after the last i, K_j and V_j) are overwritten next
    }
  }
}

template <int d>
void launch(const ladder::AttentionShape& s, const Tiles& tl, const float* Q, const float* K, const float* V, float* O,
            float* l, float* m, cudaStream_t stream) {
  ladder::allow_dynamic_smem(forward_kernel<d>, tl.smem_bytes, kWho);
  ladder::check_grid(kWho, s.heads());
  const dim3 grid(static_cast<unsigned>(s.heads()));
  forward_kernel<d>
      <<<grid, kThreads, tl.smem_bytes, stream>>>(Q, K, V, O, l, m, s.N, s.scale(), s.causal, tl.B_r, tl.B_c);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void forward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* l,
             float* m, cudaStream_t stream) {
  ladder::validate(s, kSupportedD);
  ladder::check_pointers(kWho, {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}, {"l", l, 4}, {"m", m, 4}}, 16);
  const Tiles tl = tiles(s, ladder::device().smem_per_block_optin);
  ladder::dispatch_d<32, 64, 128>(s.d, [&](auto D) { launch<D>(s, tl, Q, K, V, O, l, m, stream); });
}

}  // namespace fa1
