// A wrong answer to chapter 07's kernel exercise, kept so that the test is known to catch it:
// dK without the softmax scale.
#include "../kernel_exercise.h"
#include "cuda_check.h"
#include "launch.h"
#include "numeric.h"

namespace wrong_dk_without_scale {

const bool kImplemented = true;

namespace {

using fa2_backward_kernel_exercise::B_c;
using fa2_backward_kernel_exercise::B_r;
using fa2_backward_kernel_exercise::d;

// dK without the softmax scale: S = scale Q K^T, so dK = scale dS^T Q, and forgetting the factor
// leaves dK sqrt(d) (5.7) times too large. dV is still right.
__device__ void accumulate(float (&dK_c)[d], float (&dV_c)[d], float s, float L_r, float D_r, const float* q_r,
                           const float* dO_r, const float* v_c, float scale) {
  const float P = expf(s - L_r);
  float dP = 0.0f;
#pragma unroll
  for (int k = 0; k < d; ++k) dP = fmaf(dO_r[k], v_c[k], dP);
  const float dS = P * (dP - D_r);
  (void)scale;
#pragma unroll
  for (int k = 0; k < d; ++k) {
    dV_c[k] = fmaf(P, dO_r[k], dV_c[k]);
    dK_c[k] = fmaf(dS, q_r[k], dK_c[k]);
  }
}

// FA2's dK_j, dV_j kernel (Algorithm 2 of the FA2 paper, without dQ): one thread block per (K_j
// tile, head), one thread per key c of the tile. The block walks the Q_i tiles; thread c keeps
// its rows of dK_j and dV_j in registers the whole way, and writes them once at the end. P is
// never read: it is recomputed from Q, K and the forward's L.
__global__ void __launch_bounds__(B_c)
    dk_dv_kernel(const float* Q, const float* K, const float* V, const float* O, const float* L, const float* dO,
                 float* dK, float* dV, int N, float scale, bool causal) {
  __shared__ float K_j[B_c][d + 1];  // +1: thread c reads row c, and rows d + 1 floats apart fall on distinct banks
  __shared__ float V_j[B_c][d + 1];
  __shared__ float Q_i[B_r][d];
  __shared__ float dO_i[B_r][d];
  __shared__ float L_i[B_r], D_i[B_r];
  const int t = threadIdx.x, j0 = blockIdx.x * B_c, c = j0 + t;  // c >= N: a padding key, stores nothing
  const std::size_t head = blockIdx.y;
  const std::size_t offset = head * N * d;
  Q += offset, K += offset, V += offset, O += offset, dO += offset, dK += offset, dV += offset;
  L += head * N;

  for (int e = t; e < B_c * d; e += B_c) {
    const int r = e / d, k = e % d;
    K_j[r][k] = j0 + r < N ? K[std::size_t(j0 + r) * d + k] : 0.0f;
    V_j[r][k] = j0 + r < N ? V[std::size_t(j0 + r) * d + k] : 0.0f;
  }
  float dK_c[d], dV_c[d];
#pragma unroll
  for (int k = 0; k < d; ++k) dK_c[k] = dV_c[k] = 0.0f;

  // Causal: Q tiles that end before key j0 see nothing of K_j (B_r = B_c: start at tile j0).
  for (int i0 = causal ? j0 : 0; i0 < N; i0 += B_r) {
    const int q_valid = min(B_r, N - i0);
    __syncthreads();  // everyone is done with the previous Q_i, dO_i, L_i, D_i
    for (int e = t; e < B_r * d; e += B_c) {
      const int r = e / d, k = e % d;
      Q_i[r][k] = r < q_valid ? Q[std::size_t(i0 + r) * d + k] : 0.0f;
      dO_i[r][k] = r < q_valid ? dO[std::size_t(i0 + r) * d + k] : 0.0f;
    }
    if (t < B_r) {  // D_i = rowsum(dO_i o O_i), and the forward's L_i, one row per thread
      float D = 0.0f;
      if (t < q_valid)
        for (int k = 0; k < d; ++k) D = fmaf(dO[std::size_t(i0 + t) * d + k], O[std::size_t(i0 + t) * d + k], D);
      D_i[t] = D;
      L_i[t] = t < q_valid ? L[i0 + t] : 0.0f;
    }
    __syncthreads();

    if (c < N)
#pragma unroll 1  // one pair at a time: dK_c and dV_c already take 2 d registers
      for (int r = 0; r < q_valid; ++r) {
        if (causal && c > i0 + r) continue;  // key after the query: P = 0, adds nothing
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < d; ++k) s = fmaf(Q_i[r][k], K_j[t][k], s);
        accumulate(dK_c, dV_c, s * scale, L_i[r], D_i[r], Q_i[r], dO_i[r], V_j[t], scale);
      }
  }

  if (c < N) {
#pragma unroll
    for (int k = 0; k < d; ++k) {
      dK[std::size_t(c) * d + k] = dK_c[k];
      dV[std::size_t(c) * d + k] = dV_c[k];
    }
  }
}

}  // namespace

void dk_dv(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, const float* O,
           const float* L, const float* dO, float* dK, float* dV, cudaStream_t stream) {
  const int supported_d[] = {d};
  ladder::validate(s, supported_d);
  const dim3 grid(static_cast<unsigned>(ladder::ceil_div(s.N, B_c)), static_cast<unsigned>(s.heads()));
  ladder::check_grid("dk_dv (exercise)", grid.x, grid.y);
  dk_dv_kernel<<<grid, B_c, 0, stream>>>(Q, K, V, O, L, dO, dK, dV, s.N, s.scale(), s.causal);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wrong_dk_without_scale
