// FlashAttention-2 forward (Dao, 2023), fp32 on CUDA cores.
// One thread block per (row tile Q_i, head); the inner loop streams K_j, V_j.
// O_i, l_i, m_i stay on chip for the whole loop: O_i in registers, unnormalised,
// rescaled by one factor alpha per step and divided by l_i once at the end.
#include <stdexcept>

#include "attention_tiles.cuh"
#include "cuda_check.h"
#include "fa_forward.h"

namespace fa2 {

namespace {

using namespace fa_tiles;

// Tile sizes per head dim: each of the 256 threads owns exactly one S and one O
// micro-tile; kBlocks blocks share an SM (shared memory and registers allow it).
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

// Q_i, K_j, V_j tiles, the S_ij / P~_ij tile and one float per row.
template <int d>
constexpr int smem_bytes() {
  constexpr int B_r = Config<d>::B_r, B_c = Config<d>::B_c;
  return 4 * ((B_r + 2 * B_c) * (d + kPad) + B_r * (B_c + kPad) + B_r);
}

template <int d>
__global__ void __launch_bounds__(kThreads, Config<d>::kBlocks) fa2_forward_kernel(const float* Q, const float* K, const float* V,
                                                                  float* O, float* L, int N, float scale, bool causal) {
  constexpr int B_r = Config<d>::B_r, B_c = Config<d>::B_c;
  constexpr int TM = Micro<d>::TM, TN = Micro<d>::TN, G = Micro<d>::G;
  constexpr int RS = B_r / TM, CS = B_c / TN, XS = d / 4 / G;
  static_assert(RS * CS == kThreads && RS * XS == kThreads, "one S and one O micro-tile per thread");
  constexpr int kRows = B_r * 4 / kThreads;  // rows whose statistics this thread keeps (4 lanes per row)

  extern __shared__ float4 smem[];
  float* Q_i = reinterpret_cast<float*>(smem);  // [B_r][d + kPad]
  float* K_j = Q_i + B_r * (d + kPad);          // [B_c][d + kPad]
  float* V_j = K_j + B_c * (d + kPad);          // [B_c][d + kPad]
  float* S = V_j + B_c * (d + kPad);            // [B_r][B_c + kPad]: S_ij, then P~_ij in place
  float* row = S + B_r * (B_c + kPad);          // [B_r]: alpha each step, 1 / l_i at the end

  const int t = threadIdx.x;
  const int i = blockIdx.x, i0 = i * B_r;
  const std::size_t head = blockIdx.y;
  const float* Q_h = Q + head * N * d;
  const float* K_h = K + head * N * d;
  const float* V_h = V + head * N * d;

  load_rows<d>(Q_i, Q_h, i0, B_r, min(B_r, N - i0));  // Q_i: read once
  float4 O_i[TM][G] = {};
  float m_i[kRows], l_i[kRows];
  for (int u = 0; u < kRows; ++u) m_i[u] = -INFINITY, l_i[u] = 0.0f;

  // Causal: key tiles that start after this row tile's last query are skipped.
  const int T_c = ceil_div(causal ? min(i0 + B_r, N) : N, B_c);
  for (int j = 0; j < T_c; ++j) {
    const int j0 = j * B_c, kv_valid = min(B_c, N - j0);
    load_rows<d>(K_j, K_h, j0, B_c, kv_valid);
    load_rows<d>(V_j, V_h, j0, B_c, kv_valid);
    __syncthreads();

    // S_ij = scale Q_i K_j^T (masked), one micro-tile per thread.
    scores<d, TM, TN>(S, B_c + kPad, Q_i, K_j, t / CS, RS, t % CS, CS, i0, j0, kv_valid, scale, causal);
    __syncthreads();

    // Online softmax. Row r belongs to lanes 4r..4r+3, each taking every 4th column.
    //   m_new = max(m_i, rowmax(S_ij)),  P~_ij = exp(S_ij - m_new),
    //   alpha = exp(m_i - m_new),        l_i = alpha l_i + rowsum(P~_ij)
    for (int u = 0; u < kRows; ++u) {
      const int r = t / 4 + u * (kThreads / 4), q = t % 4;
      float* S_r = S + r * (B_c + kPad);
      float m_tile = -INFINITY;
      for (int c = q; c < B_c; c += 4) m_tile = fmaxf(m_tile, S_r[c]);
      const float m_new = fmaxf(m_i[u], max4(m_tile));
      float l_tile = 0.0f;
      for (int c = q; c < B_c; c += 4) {
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

    // O_i = diag(alpha) O_i + P~_ij V_j: one rescale, no division.
    const int rs = t / XS, xs = t % XS;
    for (int a = 0; a < TM; ++a) {
      const float alpha = row[rs + a * RS];
      for (int g = 0; g < G; ++g)
        O_i[a][g] = make_float4(alpha * O_i[a][g].x, alpha * O_i[a][g].y, alpha * O_i[a][g].z, alpha * O_i[a][g].w);
    }
    pv<d, TM, G>(O_i, S, B_c + kPad, V_j, B_c, rs, RS, xs, XS);
    __syncthreads();  // K_j, V_j, S and row[] are overwritten next step
  }

  // The one division, and L_i = m_i + log(l_i): all the backward pass needs.
  for (int u = 0; u < kRows; ++u) {
    const int r = t / 4 + u * (kThreads / 4);
    if (t % 4 == 0) {
      row[r] = 1.0f / l_i[u];
      if (i0 + r < N) L[head * N + i0 + r] = m_i[u] + logf(l_i[u]);
    }
  }
  __syncthreads();
  const int rs = t / XS, xs = t % XS;
  for (int a = 0; a < TM; ++a) {
    const int r = rs + a * RS;
    if (i0 + r >= N) continue;
    const float inv_l = row[r];
    float4* O_r = reinterpret_cast<float4*>(O + (head * N + i0 + r) * d);
    for (int g = 0; g < G; ++g)
      O_r[xs + g * XS] =
          make_float4(inv_l * O_i[a][g].x, inv_l * O_i[a][g].y, inv_l * O_i[a][g].z, inv_l * O_i[a][g].w);
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
