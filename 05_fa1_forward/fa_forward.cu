// FlashAttention-1 forward (Dao et al., 2022), Algorithm 1, fp32 on CUDA cores.
// Outer loop over K_j, V_j, inner loop over Q_i; one thread block per head.
// O_i, l_i, m_i live in HBM: read and written back at every inner step, with O_i
// kept normalised: multiply by l_i, rescale with alpha and beta, divide by the
// new l_i.
#include <stdexcept>

#include "attention_tiles.cuh"
#include "cuda_check.h"
#include "device.h"
#include "fa_forward.h"

namespace fa1 {

namespace {

using namespace fa_tiles;

// Q_i, K_j, V_j, the S_ij / P~_ij tile, O_i and two floats per row.
std::size_t smem_bytes(int d, int B_r, int B_c) {
  const int R = round_up(B_r, kRowAlign), C = round_up(B_c, 4);
  return 4 * (std::size_t(2 * R + 2 * C) * (d + kPad) + std::size_t(R) * (C + kPad) + 2 * R);
}

template <int d>
__global__ void __launch_bounds__(kThreads)
    fa1_forward_kernel(const float* Q, const float* K, const float* V, float* O, float* l, float* m, int N, float scale,
                       bool causal, int B_r, int B_c) {
  // B_r, B_c come from the device's shared memory at run time (line 1).
  const int R = round_up(B_r, kRowAlign), C = round_up(B_c, 4);  // tile extents, padded for the micro-tiles
  constexpr int TM = Micro<d>::TM, TN = Micro<d>::TN, G = Micro<d>::G;
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
    load_rows<d>(K_j, K_h, j0, C, kv_valid);
    load_rows<d>(V_j, V_h, j0, C, kv_valid);

    // Causal: row tiles that end before this key tile's first key see none of it.
    for (int i = causal ? j0 / B_r : 0; i < T_r; ++i) {  // inner loop: Q_i, O_i, l_i, m_i from HBM
      const int i0 = i * B_r, q_valid = min(B_r, N - i0);
      load_rows<d>(Q_i, Q_h, i0, R, q_valid);
      load_rows<d>(O_i, O_h, i0, R, q_valid);
      __syncthreads();

      // S_ij = scale Q_i K_j^T (masked), TM x TN micro-tiles, several per thread.
      for (int x = t; x < RS * CS; x += kThreads)
        scores<d, TM, TN>(S, C + kPad, Q_i, K_j, x / CS, RS, x % CS, CS, i0, j0, kv_valid, scale, causal);
      __syncthreads();

      // Statistics of this block, then the merge with the running ones from HBM:
      //   m~ = rowmax(S_ij), P~ = exp(S_ij - m~), l~ = rowsum(P~)
      //   m_new = max(m_i, m~), alpha = exp(m_i - m_new), beta = exp(m~ - m_new), l_new = alpha l_i + beta l~
      // Row r belongs to lanes 4r..4r+3, each taking every 4th column.
      for (int r0 = 0; r0 < R; r0 += kThreads / 4) {
        const int r = r0 + t / 4, q = t % 4;
        float* S_r = S + r * (C + kPad);
        float m_tilde = -INFINITY;
        if (r < R)
          for (int c = q; c < C; c += 4) m_tilde = fmaxf(m_tilde, S_r[c]);
        m_tilde = max4(m_tilde);
        float l_tilde = 0.0f;
        if (r < R)
          for (int c = q; c < C; c += 4) {
            const float p = exp_shifted(S_r[c], m_tilde);
            S_r[c] = p;
            l_tilde += p;
          }
        l_tilde = sum4(l_tilde);
        if (q == 0 && r < q_valid) {
          const float m_old = m_h[i0 + r], l_old = l_h[i0 + r];
          const float m_new = fmaxf(m_old, m_tilde);
          const float alpha = exp_shifted(m_old, m_new), beta = exp_shifted(m_tilde, m_new);
          const float l_new = alpha * l_old + beta * l_tilde;
          a_row[r] = l_old * alpha / l_new;  // undo the old normalisation, rescale, renormalise
          b_row[r] = beta / l_new;
          l_h[i0 + r] = l_new;  // line 13: l_i, m_i back to HBM
          m_h[i0 + r] = m_new;
        }
      }
      __syncthreads();

      // Line 12: O_i = diag(l_new)^-1 (diag(l_i) alpha O_i + beta P~_ij V_j), back to HBM.
      for (int x = t; x < RS * XS; x += kThreads) {
        const int rs = x / XS, xs = x % XS;
        float4 PV[TM][G] = {};
        pv<d, TM, G>(PV, S, C + kPad, V_j, C, rs, RS, xs, XS);
        for (int a = 0; a < TM; ++a) {
          const int r = rs + a * RS;
          if (r >= q_valid) continue;
          const float f = a_row[r], h = b_row[r];
          for (int g = 0; g < G; ++g) {
            const float4 o = reinterpret_cast<const float4*>(O_i + r * (d + kPad))[xs + g * XS];
            reinterpret_cast<float4*>(O_h + std::size_t(i0 + r) * d)[xs + g * XS] = make_float4(
                f * o.x + h * PV[a][g].x, f * o.y + h * PV[a][g].y, f * o.z + h * PV[a][g].z, f * o.w + h * PV[a][g].w);
          }
        }
      }
      __syncthreads();  // Q_i, O_i, S (and, after the last i, K_j and V_j) are overwritten next
    }
  }
}

template <int d>
void launch(const ladder::AttentionShape& s, const Tiles& tl, const float* Q, const float* K, const float* V, float* O,
            float* l, float* m, cudaStream_t stream) {
  // above 48 KB of shared memory a kernel must opt in
  CUDA_CHECK(cudaFuncSetAttribute(fa1_forward_kernel<d>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(tl.smem_bytes)));
  const dim3 grid(static_cast<unsigned>(s.heads()));
  fa1_forward_kernel<d>
      <<<grid, kThreads, tl.smem_bytes, stream>>>(Q, K, V, O, l, m, s.N, s.scale(), s.causal, tl.B_r, tl.B_c);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

Tiles tiles(const ladder::AttentionShape& s, std::size_t smem_per_block) {
  ladder::validate(s, {32, 64, 128});
  Tiles t{};
  t.M = static_cast<int>(smem_per_block / sizeof(float) * 4 / 5);
  t.B_c = ceil_div(t.M, 4 * s.d);
  t.B_r = std::min(t.B_c, s.d);
  // Our tiles pad their rows (bank spreading, micro-tile multiples): shrink until they really fit.
  while (t.B_c > 4 && smem_bytes(s.d, t.B_r, t.B_c) > smem_per_block) {
    --t.B_c;
    t.B_r = std::min(t.B_r, t.B_c);
  }
  if (smem_bytes(s.d, t.B_r, t.B_c) > smem_per_block)
    throw std::invalid_argument("fa1: " + std::to_string(smem_per_block) + " bytes of shared memory are too few");
  t.T_r = ceil_div(s.N, t.B_r);
  t.T_c = ceil_div(s.N, t.B_c);
  t.smem_bytes = smem_bytes(s.d, t.B_r, t.B_c);
  return t;
}

void forward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* l,
             float* m, cudaStream_t stream) {
  ladder::validate(s, {32, 64, 128});
  const Tiles tl = tiles(s, ladder::device().smem_per_block_optin);
  switch (s.d) {
    case 32: return launch<32>(s, tl, Q, K, V, O, l, m, stream);
    case 64: return launch<64>(s, tl, Q, K, V, O, l, m, stream);
    default: return launch<128>(s, tl, Q, K, V, O, l, m, stream);
  }
}

}  // namespace fa1
