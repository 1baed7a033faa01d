// A wrong answer to chapter 06's kernel exercise, kept so that the test is known to catch it:
// the statements in the wrong order.
#include "../kernel_exercise.h"
#include "cuda_check.h"
#include "launch.h"
#include "numeric.h"

namespace wrong_alpha_after_max_update {

const bool kImplemented = true;

namespace {

using fa2_kernel_exercise::B_c;
using fa2_kernel_exercise::B_r;
using fa2_kernel_exercise::d;

// What stays on chip for one query row while its block walks the key tiles: in registers, as
// long as every index into O is a compile-time constant (loops over k fully unrolled).
struct RowState {
  float O[d];  // O_i's row, unnormalised: the sum of e^(S_ij - m) V_j over the keys seen so far
  float m;     // m_i: the max of the scores seen so far (-inf before the first)
  float l;     // l_i: the sum of e^(S_ij - m) over the keys seen so far
};

// The running max is updated before alpha is taken, so alpha = e^(m_new - m_new) = 1 on every
// tile: neither l_i nor O_i is ever rescaled, and each tile's terms keep the weight of the max
// of their own time.
__device__ void step(RowState& st, float* s, const float (&V_j)[B_c][d]) {
  for (int c = 0; c < B_c; ++c) st.m = fmaxf(st.m, s[c]);
  const float m_new = st.m;
  const float alpha = expf(st.m - m_new);
  st.l *= alpha;
#pragma unroll
  for (int k = 0; k < d; ++k) st.O[k] *= alpha;
  for (int c = 0; c < B_c; ++c) {
    const float p = expf(s[c] - m_new);
    st.l += p;
#pragma unroll
    for (int k = 0; k < d; ++k) st.O[k] = fmaf(p, V_j[c][k], st.O[k]);
  }
}

__device__ void finish(const RowState& st, float* O_row, float& L_row) {
  const float inv_l = 1.0f / st.l;
#pragma unroll
  for (int k = 0; k < d; ++k) O_row[k] = st.O[k] * inv_l;
  L_row = st.m + logf(st.l);
}

// FA2, one thread block per (Q_i tile, head): the grid runs the outer loop over i. Thread t owns
// query row i0 + t: its q, and its O_i, m_i, l_i (RowState), live in registers for the whole
// inner loop over the key tiles K_j, V_j, which the block stages in shared memory.
__global__ void __launch_bounds__(B_r) fa2_forward_kernel(const float* Q, const float* K, const float* V, float* O,
                                                          float* L, int N, float scale, bool causal) {
  __shared__ float K_j[B_c][d];
  __shared__ float V_j[B_c][d];
  __shared__ float S[B_r][B_c + 1];                              // row t: this thread's S_ij (+1: no bank conflicts)
  const int t = threadIdx.x, i0 = blockIdx.x * B_r, i = i0 + t;  // i >= N: a padding row, stores nothing
  const std::size_t head = blockIdx.y;
  Q += head * N * d, K += head * N * d, V += head * N * d, O += head * N * d, L += head * N;

  float q[d];
#pragma unroll
  for (int k = 0; k < d; ++k) q[k] = i < N ? Q[std::size_t(i) * d + k] * scale : 0.0f;
  RowState st;
#pragma unroll
  for (int k = 0; k < d; ++k) st.O[k] = 0.0f;
  st.m = -INFINITY;
  st.l = 0.0f;

  // Causal: key tiles that start after this tile's last query are skipped. Every row sees key 0,
  // so after the first tile every m_i is finite.
  const int T_c = ladder::ceil_div(causal ? min(i0 + B_r, N) : N, B_c);
  for (int j = 0; j < T_c; ++j) {  // inner loop: K_j, V_j streamed
    const int j0 = j * B_c, kv_valid = min(B_c, N - j0);
    __syncthreads();  // every thread is done with the previous K_j, V_j
    for (int e = t; e < B_c * d; e += B_r) {
      const int c = e / d, k = e % d;
      K_j[c][k] = c < kv_valid ? K[std::size_t(j0 + c) * d + k] : 0.0f;
      V_j[c][k] = c < kv_valid ? V[std::size_t(j0 + c) * d + k] : 0.0f;
    }
    __syncthreads();

    // S_ij's row: scale q . k_c, -inf for keys past N and, when causal, keys after query i.
    float* s = S[t];
    for (int c = 0; c < B_c; ++c) {
      float x = 0.0f;
#pragma unroll
      for (int k = 0; k < d; ++k) x = fmaf(q[k], K_j[c][k], x);
      const bool seen = c < kv_valid && (!causal || j0 + c <= i);
      s[c] = seen ? x : -INFINITY;
    }
    step(st, s, V_j);
  }
  if (i < N) finish(st, O + std::size_t(i) * d, L[i]);
}

}  // namespace

void fa2_forward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* L,
                 cudaStream_t stream) {
  const int supported_d[] = {d};
  ladder::validate(s, supported_d);
  const dim3 grid(static_cast<unsigned>(ladder::ceil_div(s.N, B_r)), static_cast<unsigned>(s.heads()));
  ladder::check_grid("fa2_forward (exercise)", grid.x, grid.y);
  fa2_forward_kernel<<<grid, B_r, 0, stream>>>(Q, K, V, O, L, s.N, s.scale(), s.causal);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wrong_alpha_after_max_update
