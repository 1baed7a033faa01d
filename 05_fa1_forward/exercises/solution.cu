// The solution of chapter 05's kernel exercise (mine.cu): fa_forward.cu's lines 11-13, one row at a time.
// Read it after your own version passes (or fails twice).
#include <stdexcept>

#include "cuda_check.h"
#include "kernel_exercise.h"
#include "launch.h"

namespace solution {

const bool kImplemented = true;

namespace {

using fa1_kernel_exercise::B_c;
using fa1_kernel_exercise::B_r;
using fa1_kernel_exercise::d;

// Lines 11-13 of Algorithm 1 for one query row (see mine.cu for what each argument holds).
__device__ void update_row(float* O_row, float& l_i, float& m_i, float m_tilde, float l_tilde, const float* p,
                           const float (&V_j)[B_c][d]) {
  const float m_new = fmaxf(m_i, m_tilde);  // m_tilde is finite, so m_new is
  const float alpha = expf(m_i - m_new);    // e^(-inf) = 0 on the first tile
  const float beta = expf(m_tilde - m_new);
  const float l_new = alpha * l_i + beta * l_tilde;
  for (int k = 0; k < d; ++k) {
    float pv = 0.0f;  // (P~_ij V_j)[k]
    for (int c = 0; c < B_c; ++c) pv = fmaf(p[c], V_j[c][k], pv);
    O_row[k] = (l_i * alpha * O_row[k] + beta * pv) / l_new;  // undo l_i, rescale both, renormalise
  }
  l_i = l_new;
  m_i = m_new;
}

// Algorithm 1 of the FlashAttention paper, one thread block per head, one thread per query row
// of Q_i. Outer loop over j: K_j, V_j are read from HBM once, into shared memory. Inner loop
// over i: the block reads Q_i and the running O_i, l_i, m_i from HBM, and writes them back
// updated. Thread t owns query row i0 + t of every Q_i, so it alone reads and writes that row of
// O, l and m: no barrier is needed inside the inner loop.
__global__ void __launch_bounds__(B_r) fa1_forward_kernel(const float* Q, const float* K, const float* V, float* O,
                                                          float* l, float* m, int N, float scale) {
  __shared__ float K_j[B_c][d];
  __shared__ float V_j[B_c][d];
  __shared__ float S[B_r][B_c + 1];  // row t: this thread's S_ij, then P~_ij in place (+1: no bank conflicts)
  const int t = threadIdx.x;
  const std::size_t head = blockIdx.x;
  Q += head * N * d, K += head * N * d, V += head * N * d, O += head * N * d;
  l += head * N, m += head * N;

  // Line 2: O = 0, l = 0, m = -inf in HBM, each thread for the rows it owns.
  for (int i = t; i < N; i += B_r) {
    for (int k = 0; k < d; ++k) O[std::size_t(i) * d + k] = 0.0f;
    l[i] = 0.0f;
    m[i] = -INFINITY;
  }

  for (int j0 = 0; j0 < N; j0 += B_c) {  // outer loop (line 5): K_j, V_j, loaded once
    const int kv_valid = min(B_c, N - j0);
    __syncthreads();  // every thread is done with the previous K_j, V_j
    for (int e = t; e < B_c * d; e += B_r) {
      const int c = e / d, k = e % d;
      K_j[c][k] = c < kv_valid ? K[std::size_t(j0 + c) * d + k] : 0.0f;
      V_j[c][k] = c < kv_valid ? V[std::size_t(j0 + c) * d + k] : 0.0f;
    }
    __syncthreads();

    for (int i0 = 0; i0 < N; i0 += B_r) {  // inner loop (line 7): Q_i, O_i, l_i, m_i from HBM
      const int i = i0 + t;
      if (i >= N) break;  // past the last query: so is this thread's row of every later tile
      float q[d];
#pragma unroll
      for (int k = 0; k < d; ++k) q[k] = Q[std::size_t(i) * d + k] * scale;

      // Lines 9-10 for this row: S_ij = scale Q_i K_j^T (keys past N masked), m~ = rowmax(S_ij),
      // P~_ij = exp(S_ij - m~), l~ = rowsum(P~_ij). m~ is finite: every K_j holds a key < N.
      float* p = S[t];
      float m_tilde = -INFINITY;
      for (int c = 0; c < B_c; ++c) {
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < d; ++k) s = fmaf(q[k], K_j[c][k], s);
        p[c] = c < kv_valid ? s : -INFINITY;
        m_tilde = fmaxf(m_tilde, p[c]);
      }
      float l_tilde = 0.0f;
      for (int c = 0; c < B_c; ++c) {
        p[c] = expf(p[c] - m_tilde);  // 0 for a masked key
        l_tilde += p[c];
      }

      update_row(O + std::size_t(i) * d, l[i], m[i], m_tilde, l_tilde, p, V_j);  // lines 11-13
    }
  }
}

}  // namespace

void fa1_forward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* l,
                 float* m, cudaStream_t stream) {
  const int supported_d[] = {d};
  ladder::validate(s, supported_d);
  if (s.causal) throw std::invalid_argument("fa1_forward (exercise): causal masks are not part of this exercise");
  ladder::check_grid("fa1_forward (exercise)", s.heads());
  fa1_forward_kernel<<<static_cast<unsigned>(s.heads()), B_r, 0, stream>>>(Q, K, V, O, l, m, s.N, s.scale());
  CUDA_CHECK_LAUNCH();
}

}  // namespace solution
