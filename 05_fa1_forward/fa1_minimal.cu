// fa1_minimal.cu: chapter 05's FlashAttention-1 forward (Algorithm 1 of Dao et al., 2022), the whole
// algorithm in one file, fp32 on CUDA cores.
//   nvcc -O2 -std=c++17 -arch=sm_75 -o fa1_minimal 05_fa1_forward/fa1_minimal.cu && ./fa1_minimal
// (-arch=sm_75 runs on a T4 and, through the PTX it carries, on every later GPU.) Q, K, V, O [B*H, N, 64].
// One thread block per head walks the key tiles K_j, V_j (outer loop) and, for each, every query tile Q_i
// (inner loop); one thread per query row, so a row's softmax needs no talk between threads. O_i, l_i, m_i
// live in HBM and O_i is kept normalised: every step reads it back, rescales it and divides by the new l_i.
// Left out (the chapter's fa_forward.cu has them, for speed): register micro-tiles, 4 lanes per row,
// tiles sized from the GPU's shared memory, d other than 64. main() checks O and L = m + log(l) against a
// CPU reference in fp64, dense and causal; without a GPU it prints a skip line and exits 0.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    const cudaError_t e = (call);                                                          \
    if (e != cudaSuccess) return std::printf("%s: %s\n", #call, cudaGetErrorString(e)), 1; \
  } while (0)

// Line 1: the tiles from the on-chip memory M (in floats) the algorithm may use, so that K_j, V_j, Q_i,
// O_i each take at most M/4 and, as B_r <= d, S_ij (B_r x B_c) another M/4. 8192 floats = 32 KiB.
constexpr int D = 64, M = 8192, B_c = (M + 4 * D - 1) / (4 * D), B_r = B_c < D ? B_c : D;  // 32, 32

__global__ void __launch_bounds__(B_r) fa1_forward(const float* Q, const float* K, const float* V, float* O, float* l,
                                                   float* m, int N, bool causal, float scale) {
  __shared__ float K_j[B_c][D], V_j[B_c][D];  // read by every thread at the same address: a broadcast
  __shared__ float S[B_r][B_c + 1];           // row r: thread r's S_ij, then P~_ij (+1: no bank conflicts)
  const int r = threadIdx.x;
  const size_t head = blockIdx.x;  // the block owns the head: O_i, l_i, m_i are its alone
  Q += head * N * D, K += head * N * D, V += head * N * D, O += head * N * D, l += head * N, m += head * N;

  // Line 2: O = 0, l = 0, m = -inf in HBM (the __syncthreads below makes them visible to the block).
  for (int e = r; e < N * D; e += B_r) O[e] = 0.0f;
  for (int e = r; e < N; e += B_r) l[e] = 0.0f, m[e] = -INFINITY;

  const int T_r = (N + B_r - 1) / B_r, T_c = (N + B_c - 1) / B_c;
  for (int j = 0; j < T_c; ++j) {  // outer loop: K_j, V_j loaded once (line 6)
    const int j0 = j * B_c;
    __syncthreads();  // every thread is done with the previous K_j, V_j
    for (int e = r; e < B_c * D; e += B_r) {
      const bool ok = j0 + e / D < N;  // the tail of the last tile: zeros, masked below
      K_j[e / D][e % D] = ok ? K[size_t(j0) * D + e] : 0.0f;
      V_j[e / D][e % D] = ok ? V[size_t(j0) * D + e] : 0.0f;
    }
    __syncthreads();

    // Causal: query tiles that end before key j0 see none of K_j. No barrier below: thread r touches
    // only row i0 + r of Q, O, l, m, so nothing it reads was written by another thread.
    for (int i = causal ? j0 / B_r : 0; i < T_r; ++i) {  // inner loop: Q_i, O_i, l_i, m_i from HBM (line 8)
      const int row = i * B_r + r;
      if (row >= N) break;  // a padding row of the last Q_i; later tiles only have larger rows
      float q[D];           // Q_i's row, scaled: one multiply per element, not per score
#pragma unroll
      for (int k = 0; k < D; ++k) q[k] = Q[size_t(row) * D + k] * scale;

      // Lines 9-10: S_ij = Q_i K_j^T / sqrt(d), -inf past N and, causal, after the query; its max m~.
      float* s = S[r];
      float m_tilde = -INFINITY;
      for (int c = 0; c < B_c; ++c) {
        float x = 0.0f;
#pragma unroll
        for (int k = 0; k < D; ++k) x = fmaf(q[k], K_j[c][k], x);
        s[c] = j0 + c < N && (!causal || j0 + c <= row) ? x : -INFINITY;
        m_tilde = fmaxf(m_tilde, s[c]);
      }
      // No key of K_j for this row (causal, with B_r > B_c): nothing to merge, and exp(-inf + inf) would be
      // NaN. Never true with this file's B_r = B_c; kept so that other tiles stay correct.
      if (m_tilde == -INFINITY) continue;
      float l_tilde = 0.0f;  // line 10: P~_ij = exp(S_ij - m~), l~ = rowsum(P~_ij), against K_j's own max
      for (int c = 0; c < B_c; ++c) l_tilde += s[c] = expf(s[c] - m_tilde);

      // Line 11: merge (m~, l~) with the running (m_i, l_i). alpha = 0 on the first step (m_i = -inf).
      const float m_i = m[row], l_i = l[row], m_new = fmaxf(m_i, m_tilde);
      const float alpha = expf(m_i - m_new), beta = expf(m_tilde - m_new), l_new = alpha * l_i + beta * l_tilde;
      // Line 12: O_i = diag(l_new)^-1 (diag(l_i) alpha O_i + beta P~_ij V_j). O_i is stored normalised,
      // so l_i undoes the old division and l_new does the new one: a division per step, and O_i's row
      // crosses HBM twice per key tile. FA2 (chapter 06) removes both.
      const float a = l_i * alpha / l_new, b = beta / l_new;
      for (int k = 0; k < D; ++k) {
        float pv = 0.0f;  // this tile's P~_ij V_j first, then one rescale of the running O_i
        for (int c = 0; c < B_c; ++c) pv = fmaf(s[c], V_j[c][k], pv);
        O[size_t(row) * D + k] = a * O[size_t(row) * D + k] + b * pv;
      }
      l[row] = l_new, m[row] = m_new;  // line 13
    }
  }
}

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    return std::printf("GPU test skipped: no CUDA device\n"), 0;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  bool ok = true;
  for (int N : {1, 64, 200})  // 200: a multiple of no tile
    for (bool causal : {false, true}) {
      const int BH = 3;
      const size_t n = size_t(BH) * N * D;
      std::vector<float> x[3], O(n), l(size_t(BH) * N), m(size_t(BH) * N);  // x: Q, K, V
      for (auto& v : x)
        for (size_t e = 0; e < n; ++e) v.push_back(uniform(rng));
      float *dQ, *dK, *dV, *dO, *dl, *dm;
      for (float** p : {&dQ, &dK, &dV, &dO}) CHECK(cudaMalloc(p, n * sizeof(float)));
      for (float** p : {&dl, &dm}) CHECK(cudaMalloc(p, l.size() * sizeof(float)));
      CHECK(cudaMemcpy(dQ, x[0].data(), n * sizeof(float), cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(dK, x[1].data(), n * sizeof(float), cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(dV, x[2].data(), n * sizeof(float), cudaMemcpyHostToDevice));
      CHECK(cudaMemset(dO, 0xff, n * sizeof(float)));  // NaN: a missed line 2 or a skipped row cannot pass
      fa1_forward<<<BH, B_r>>>(dQ, dK, dV, dO, dl, dm, N, causal, 1.0f / std::sqrt(float(D)));
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaMemcpy(O.data(), dO, n * sizeof(float), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(l.data(), dl, l.size() * sizeof(float), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(m.data(), dm, m.size() * sizeof(float), cudaMemcpyDeviceToHost));
      for (float* p : {dQ, dK, dV, dO, dl, dm}) CHECK(cudaFree(p));

      double err = 0, ref2 = 0, errL = 0, refL2 = 0;  // O = softmax(Q K^T / sqrt(d)) V in fp64, row by row
      for (int b = 0; b < BH; ++b)
        for (int i = 0; i < N; ++i) {
          const size_t row = size_t(b) * N + i;
          const int last = causal ? i : N - 1;
          std::vector<double> p(N, 0.0), ref(D, 0.0);
          double mx = -INFINITY, sum = 0;
          for (int j = 0; j <= last; ++j) {
            for (int k = 0; k < D; ++k) p[j] += double(x[0][row * D + k]) * x[1][(row - i + j) * D + k];
            mx = std::fmax(mx, p[j] /= std::sqrt(double(D)));
          }
          for (int j = 0; j <= last; ++j) sum += p[j] = std::exp(p[j] - mx);
          for (int j = 0; j <= last; ++j)
            for (int k = 0; k < D; ++k) ref[k] += p[j] / sum * x[2][(row - i + j) * D + k];
          for (int k = 0; k < D; ++k)
            err += (O[row * D + k] - ref[k]) * (O[row * D + k] - ref[k]), ref2 += ref[k] * ref[k];
          const double L = mx + std::log(sum), got = m[row] + std::log(double(l[row]));  // the log-sum-exp
          errL += (got - L) * (got - L), refL2 += L * L;
        }
      // kFp32 of common/compare.h: fp32 sums carry ~sqrt(n) 2^-24; an indexing or masking bug gives O(1).
      const double rel = std::sqrt(err / ref2), relL = std::sqrt(errL / refL2);
      const bool pass = rel <= 1e-5 && relL <= 1e-5;  // false for NaN too
      ok &= pass;
      std::printf("fa1_minimal B*H=%d N=%d d=%d %s: rel l2 error O %.2e, m + log(l) %.2e (bound 1e-5): %s\n", BH, N, D,
                  causal ? "causal" : "dense", rel, relL, pass ? "PASS" : "FAIL");
    }
  return ok ? 0 : 1;
}
